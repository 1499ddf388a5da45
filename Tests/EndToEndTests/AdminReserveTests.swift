import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A daemon whose `limits.maxConnections` others hold still lets admins in, on
/// `limits.adminReservedConnections` more (hostile34b N5, issue 32): the metrics unit and the
/// operator reach it. Each refused connection is counted once as a request with outcome
/// `TooManyConnections`; and when even the reserve is taken, the metrics unit writes that the
/// daemon runs and refused it, not `accountd_up 0`.
@Suite(.enabled(
    if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && getpwnam("nobody")?.pointee.pw_uid == 65534,
    "needs root, setpriv, and the user nobody (65534)"))
struct AdminReserveTests {
    @Test func adminsReachAFloodedDaemonOnTheirReserveAndRefusalsAreCounted() throws {
        let dir = TestDirectory()
        let daemon = try FairShareTests.daemon(dir, limits: "  maxConnections: 4\n  maxConnectionsPerUid: 4\n  adminReservedConnections: 2")
        // nobody holds every ordinary slot.
        var watchers: [Process] = []
        defer { FairShareTests.stopAll(watchers) }
        for _ in 0..<4 { watchers.append(try FairShareTests.start(as: FairShareTests.nobody, daemon, ["watch"])) }
        Thread.sleep(forTimeInterval: 1.5)
        #expect(watchers.allSatisfy { $0.isRunning }, "nobody's four watchers are connected")
        let fifth = try AccessTests.accountctl(as: FairShareTests.nobody, socket: daemon.socket, ["ping"])
        #expect(fifth.status != 0 && fifth.stderr.contains("TooManyConnections"), "\(fifth.stderr)")

        // The metrics unit (root, an admin) is served on the reserve, and counts that refusal once.
        let file = dir.sub("accountd.prom")
        let up = try FleetMetricsTests.writeTextfile(file, socket: daemon.socket)
        #expect(up.status == 0, "\(up.stderr)")
        let served = MetricsTests.samples(try String(contentsOfFile: file, encoding: .utf8))
        #expect(served["accountd_up"] == 1, "\(served)")
        #expect(served[#"accountd_requests_total{method="unknown",outcome="TooManyConnections"}"#] == 1, "\(served.filter { $0.key.contains("requests_total") })")
        // An operator too.
        #expect(try E2E.accountctl(["status"], socket: daemon.socket).status == 0)

        // The reserve taken as well: the metrics unit is refused, and says the daemon runs and refused it.
        var admins: [RawClient] = []
        for _ in 0..<2 { admins.append(try #require(LimitsTests.servedClient(daemon.socket), "admin connection \(admins.count + 1) of the reserve")) }
        let refused = try FleetMetricsTests.writeTextfile(file, socket: daemon.socket)
        #expect(refused.status == 1 && refused.stderr.contains("accountd_metrics_refused 1"), "\(refused.stderr)")
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let samples = MetricsTests.samples(text)
        #expect(samples["accountd_up"] == 1 && samples["accountd_metrics_refused"] == 1, "\(text)")
        if let firing = try FleetMetricsTests.firing(file) { #expect(firing == ["AccountdConnectionsFull"], "\(firing)") }
        for client in admins { #expect(try client.callOne("ping").error == nil) }
    }
}
