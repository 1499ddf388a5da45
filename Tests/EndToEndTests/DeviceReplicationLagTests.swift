import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `device.sqlite`'s replication lag shows like an account's (issue 33's third review, F-f):
/// with the store frozen and device-wide Sets waiting, `replication` answered every account
/// `replicating` with a worst lag of 1.4 s, and exit status 0.
@Suite(.enabled(if: TestWeed.available, Comment(rawValue: TestWeed.skipReason)))
struct DeviceReplicationLagTests {
    @Test func aFrozenStoreShowsDeviceWideLagToo() throws {
        let dir = TestDirectory()
        let host = try ReplicatingHost(dir)
        let (store, daemon, litestream, client) = (host.store, host.daemon, host.litestream, host.client)
        let set = try client.callOne(E2E.request("Set", [("namespace", "switch"), ("key", "kiosk"), ("value", "lobby")]))
        try #require(set.error == nil, "\(set)")
        try litestream.syncAndWait(daemon.accountPath("alice"))
        try litestream.syncAndWait(daemon.dataRoot + "/device.sqlite")
        let healthy = try JSONParser.parse(try E2E.accountctl(["--json", "replication"], socket: daemon.socket).stdout)
        #expect(healthy["device"]?["account"] == "device.sqlite" && healthy["device"]?["status"] == "replicating", "\(healthy)")

        store.freeze()
        defer { store.thaw() }
        // Only device-wide writes: alice has nothing waiting.
        for index in 0..<8 {
            _ = try client.callOne(E2E.request("Set", [("namespace", "switch"), ("key", "kiosk"), ("value", .string("room-\(index)"))]))
        }
        var report = ""
        let shown = waitUntil(timeout: 20, interval: 0.25) {
            guard let run = try? E2E.accountctl(["--json", "replication"], socket: daemon.socket) else { return false }
            report = run.stdout
            return (try? JSONParser.parse(run.stdout))?["device"]?["status"] == "behind"
        }
        #expect(shown, "\(report)")
        let parsed = try JSONParser.parse(report)
        #expect((parsed["behind"]?.intValue ?? 0) >= 1 && (parsed["worstSecondsBehind"].flatMap(ObjectStoreReplicationTests.number) ?? 0) >= 5, "\(report)")
        let table = try E2E.accountctl(["replication"], socket: daemon.socket)
        #expect(table.status == 1 && table.stdout.contains("device.sqlite"), "\(table.stdout) \(table.stderr)")
        let metrics = try client.callOne("metrics").parameters["text"]?.stringValue ?? ""
        let lag = metrics.split(separator: "\n").first { $0.hasPrefix("accountd_replication_lag_seconds ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        #expect((lag ?? 0) >= 5, "\(metrics)")
    }
}
