import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SPEC section 9: SIGTERM stops accepting at once, and the daemon exits as soon as what
/// runs is done, whatever the watchdog's interval.
@Suite struct ShutdownTests {
    /// With `WATCHDOG_USEC=30000000` the daemon used to exit 8.5 to 15 s after SIGTERM (at the
    /// watchdog's next check, which the shutdown waited for) and meanwhile took new connections
    /// and served them (`switch` succeeded 1 s after SIGTERM).
    @Test(arguments: [nil, "30000000"])
    func sigtermStopsAcceptingAtOnceAndExitsPromptly(watchdog: String?) throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: watchdog.map { ["WATCHDOG_USEC": $0] } ?? [:])
        if watchdog != nil { #expect(daemon.log.contains("systemd watchdog on"), "\(daemon.log)") }
        // The varlink socket sits beside the line socket when RUNTIME_DIRECTORY is not set.
        let varlink = dir.sub("io.accountd")
        #expect(SystemdSupport.connectError(varlink) == 0)
        let open = try daemon.client()
        #expect(try open.callOne("switch alice").parameters["action"] == "created")

        let sent = Date()
        kill(daemon.process.processIdentifier, SIGTERM)
        // New connections are refused on both sockets within a moment.
        let refusing = waitUntil(timeout: 1) { SystemdSupport.connectError(daemon.socket) != 0 && SystemdSupport.connectError(varlink) != 0 }
        #expect(refusing, "still accepting connections \(Date().timeIntervalSince(sent)) s after SIGTERM")
        // A new request on a connection opened before is not served: ShuttingDown, or closed.
        let reply = try? open.callOne("switch bob")
        #expect(reply == nil || reply?.error == .shuttingDown, "served after SIGTERM: \(reply.map { $0.encoded() } ?? "")")
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("bob")))

        let exited = waitUntil(timeout: 30) { !daemon.process.isRunning }
        let took = Date().timeIntervalSince(sent)
        #expect(exited)
        #expect(took < 3, "exit took \(took) s after SIGTERM")
        daemon.process.waitUntilExit()
        #expect(daemon.process.terminationStatus == 0, "\(daemon.log.suffix(1500))")
        #expect(daemon.log.contains("accountd stopped"))
    }
}
