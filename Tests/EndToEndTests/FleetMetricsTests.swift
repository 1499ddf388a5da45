import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// What an operator watches a fleet with (issue 34), against the real binaries: the
/// metrics file the metrics unit writes, with the daemon up and down; the figures a
/// rollout shows while it runs and after an account failed; and the alert rules of
/// `config/prometheus/accountd-alerts.yml` evaluated on that real output with
/// `prometheus_client`'s parser (`scripts/check-alerts.py`).
@Suite struct FleetMetricsTests {
    static let rules = Repository.root + "/config/prometheus/accountd-alerts.yml"

    /// The alerts that fire on the metrics text in `file`, at `now` (default: the present),
    /// with some thresholds replaced; nil, with the reason printed, without the Python.
    static func firing(_ file: String, now: Double? = nil, thresholds: [String: Double] = [:]) throws -> Set<String>? {
        guard let python = MetricsTests.python() else { return nil }
        var arguments = [Repository.root + "/scripts/check-alerts.py", rules, file]
        if let now { arguments += ["--now", String(now)] }
        for (alert, value) in thresholds { arguments += ["--threshold", "\(alert)=\(value)"] }
        let run = try E2E.run(python, arguments)
        try #require(run.status == 0, "check-alerts.py failed: \(run.stderr)")
        return Set(run.stdout.split(separator: "\n").map(String.init))
    }

    /// `accountctl metrics --textfile`, as accountd-metrics.service runs it.
    static func writeTextfile(_ file: String, socket: String) throws -> (status: Int32, stdout: String, stderr: String) {
        try E2E.accountctl(["metrics", "--textfile", file], socket: socket)
    }

    /// A daemon that accepts connections but never answers (hung; SIGSTOP stands in) kept
    /// the last `accountd_up 1` file, and the metrics command waited forever (the review of
    /// issue 34, finding 8). Now it writes `accountd_up 0` after `--timeout` and exits 1.
    @Test func aHungDaemonIsWrittenDownAfterTheTimeout() throws {
        let dir = TestDirectory()
        let file = dir.sub("accountd.prom")
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        #expect(try Self.writeTextfile(file, socket: daemon.socket).status == 0)
        kill(daemon.process.processIdentifier, SIGSTOP)
        defer { kill(daemon.process.processIdentifier, SIGCONT) }
        let started = Date()
        let hung = try E2E.accountctl(["metrics", "--textfile", file, "--timeout", "2"], socket: daemon.socket)
        let took = Date().timeIntervalSince(started)
        #expect(hung.status == 1 && hung.stderr.contains("did not answer within"), "\(hung.stderr)")
        #expect(took < 20, "it waited \(took) s")
        let samples = MetricsTests.samples(try String(contentsOfFile: file, encoding: .utf8))
        #expect(samples["accountd_up"] == 0, "\(samples)")
    }

    @Test func theMetricsFileSaysDownWhenTheDaemonIsStopped() throws {
        let dir = TestDirectory()
        let file = dir.sub("accountd.prom")
        let daemon = try E2E.daemon(directory: dir.path)
        let up = try Self.writeTextfile(file, socket: daemon.socket)
        #expect(up.status == 0, "\(up.stderr)")
        let running = MetricsTests.samples(try String(contentsOfFile: file, encoding: .utf8))
        #expect(running["accountd_up"] == 1 && running["accountd_bundle_version"] == 3, "\(running)")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o644, "node_exporter must be able to read it")
        if let firing = try Self.firing(file) { #expect(firing.isEmpty, "a healthy idle daemon fires nothing: \(firing)") }

        _ = E2E.stop(daemon)
        let down = try Self.writeTextfile(file, socket: daemon.socket)
        #expect(down.status == 1 && down.stderr.contains("accountd_up 0"), "\(down.stderr)")
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let stopped = MetricsTests.samples(text)
        #expect(stopped["accountd_up"] == 0, "the old text must not stay: \(text)")
        #expect(stopped["accountd_requests_total{method=\"Metrics\",outcome=\"ok\"}"] == nil, "\(text)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".accountd.prom") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        if let firing = try Self.firing(file) { #expect(firing == ["AccountdDown"], "\(firing)") }
        // The timer stopped too: the file ages, and the staleness alert fires.
        if let firing = try Self.firing(file, now: Date().timeIntervalSince1970 + 400) {
            #expect(firing == ["AccountdDown", "AccountdMetricsStale"], "\(firing)")
        }

        // The unit runs exactly this.
        let unit = try String(contentsOfFile: Repository.root + "/systemd/accountd-metrics.service.in", encoding: .utf8)
        #expect(unit.contains("ExecStart=@BINDIR@/accountctl metrics --textfile ${TEXTFILE_DIR}/accountd.prom"), "\(unit)")
    }

    @Test func noAccountNameIsALabelUnlessAsked() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        #expect(try daemon.client().callOne("switch kiosk-0042").error == nil)
        let text = try MetricsTests.metrics(daemon)
        #expect(!text.contains("kiosk-0042"), "\(text)")
        #expect(MetricsTests.samples(text)["accountd_active_accounts"] == 1)
        _ = E2E.stop(daemon)

        try FileManager.default.createDirectory(atPath: dir.sub("labelled"), withIntermediateDirectories: true)
        let labelled = try E2E.daemon(directory: dir.sub("labelled"), environment: ["ACCOUNTD_METRICS_ACCOUNT_LABELS": "true"])
        defer { _ = E2E.stop(labelled) }
        #expect(try labelled.client().callOne("switch kiosk-0042").error == nil)
        #expect(MetricsTests.samples(try MetricsTests.metrics(labelled))[#"accountd_active_account{account="kiosk-0042"}"#] == 1)
    }
}
