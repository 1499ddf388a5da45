import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// With Litestream stopped or not answering, `accountd_replication_lag_seconds` read 0 and
/// no shipped rule watched replication (hostile33c #10). Now the lag is the time since the
/// last upload accountd saw, growing whatever Litestream's state, and the rules of
/// `config/prometheus/accountd-alerts.yml` (`AccountdReplicationLagging`,
/// `AccountdLitestreamDown`) fire on the real metrics text, evaluated with
/// `prometheus_client`'s parser (`scripts/check-alerts.py`).
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct ReplicationAlertTests {
    /// The metrics text as the metrics unit writes it, and its samples.
    static func scrape(_ daemon: DaemonProcess, into file: String) throws -> [String: Double] {
        let written = try FleetMetricsTests.writeTextfile(file, socket: daemon.socket)
        try #require(written.status == 0, "\(written.stderr)")
        return MetricsTests.samples(try String(contentsOfFile: file, encoding: .utf8))
    }

    @Test func theLagGrowsAndTheAlertsFireWhileLitestreamIsDown() throws {
        let dir = TestDirectory()
        let (_, _, daemon, litestream) = try ReplicationTests.replicatingHost(dir)
        let file = dir.sub("accountd.prom")
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        try litestream.syncAndWait(daemon.accountPath("alice"))
        let healthy = try Self.scrape(daemon, into: file)
        #expect(healthy["accountd_replication_litestream_up"] == 1 && (healthy["accountd_replication_lag_seconds"] ?? 99) < 5, "\(healthy)")
        if let firing = try FleetMetricsTests.firing(file) { #expect(firing.isEmpty, "a healthy replicating daemon fires nothing: \(firing)") }

        // Litestream hangs (SIGSTOP), then is gone: writes wait, and the lag must grow.
        let pid = litestream.process.processIdentifier
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        _ = try E2E.sql(daemon.accountPath("alice"), "INSERT INTO item (name, n) VALUES ('waiting', 1);")
        Thread.sleep(forTimeInterval: 3)
        let hung = try Self.scrape(daemon, into: file)
        #expect(hung["accountd_replication_litestream_up"] == 0, "\(hung)")
        let hungLag = hung["accountd_replication_lag_seconds"] ?? 0
        #expect(hungLag >= 3, "the lag reads \(hungLag) while nothing can be shipped: \(hung)")
        if let firing = try FleetMetricsTests.firing(file, thresholds: ["AccountdReplicationLagging": 2]) {
            #expect(firing == ["AccountdReplicationLagging", "AccountdLitestreamDown"], "\(firing)")
        }
        kill(pid, SIGCONT)
        litestream.stop(signal: SIGKILL)
        Thread.sleep(forTimeInterval: 1)
        let stopped = try Self.scrape(daemon, into: file)
        #expect(stopped["accountd_replication_litestream_up"] == 0, "\(stopped)")
        #expect((stopped["accountd_replication_lag_seconds"] ?? 0) > hungLag, "the lag stopped growing: \(stopped)")
        if let firing = try FleetMetricsTests.firing(file) { #expect(firing == ["AccountdLitestreamDown"], "\(firing)") }
    }
}
