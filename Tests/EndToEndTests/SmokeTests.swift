import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The daemon starts, answers, switches, and stops cleanly.
@Suite struct SmokeTests {
    @Test func startSwitchStatusStop() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let client = try daemon.client()
        let info = try client.callOne("info")
        #expect(info.parameters["product"] == "accountd")
        #expect(info.parameters["protocol"] == 1)
        let switched = try client.callOne("switch alice")
        #expect(switched.parameters["action"] == "created")
        #expect(switched.parameters["version"] == 3)
        let status = try client.callOne(#"{"method":"io.accountd.Status"}"#)
        #expect(status.parameters["active"] == "alice")
        #expect(status.parameters["state"] == "ready")
        #expect(Files.mode(daemon.socket) == 0o660)
        #expect(daemon.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
    }
}
