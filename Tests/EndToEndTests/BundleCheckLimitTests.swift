import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A bundle check that never ends is seen and bounded (hostile34b N5), against the real daemon:
/// while a reload checks a bundle, `Status` and the metrics say for how long; past
/// `schema.checkTimeoutSeconds` the reload is refused naming the file and line where the check
/// stood, the bundle in force unchanged; at start-up the same limit makes the daemon exit with
/// that error instead of never listening.
@Suite struct BundleCheckLimitTests {
    /// A step that counts to three billion on an empty database: a check that never ends.
    static let endless =
        "CREATE TABLE big AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000000) SELECT max(x) AS m FROM c;\n"
    static let limit = ["ACCOUNTD_SCHEMA_CHECK_TIMEOUT_SECONDS": "4"]

    @Test func aReloadsHungCheckIsShownThenRefusedAtItsTimeLimit() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [FleetStopTests.item])
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle, environment: Self.limit)
        defer { _ = E2E.stop(daemon) }
        try Files.write(Self.endless, to: bundle + "/migrations/0002_step2.sql")
        kill(daemon.process.processIdentifier, SIGHUP)

        var shown = false
        let seen = waitUntil(timeout: 10, interval: 0.2) {
            let status = (try? daemon.client().callOne("status"))?.parameters
            let samples = (try? MetricsTests.metrics(daemon)).map(MetricsTests.samples) ?? [:]
            shown = (status?["bundleCheckSeconds"]?.intValue ?? 0) >= 1 && samples["accountd_reload_bundle_check_seconds"] ?? 0 >= 1
            return shown
        }
        #expect(seen, "Status and the metrics show the check running: \(daemon.log.suffix(2000))")
        let text = try E2E.accountctl(["status"], socket: daemon.socket)
        #expect(text.stdout.contains("checking a new bundle") || !seen, "\(text.stdout)")

        let refused = waitUntil(timeout: 20) { daemon.log.contains("time limit of 4 s") }
        #expect(refused, "\(daemon.log.suffix(3000))")
        #expect(daemon.log.contains("reload refused") && daemon.log.contains("migrations/0002_step2.sql line 1"), "\(daemon.log.suffix(3000))")
        let after = try daemon.client().callOne("status").parameters
        #expect(after["bundleVersion"] == 1 && after["bundleCheckSeconds"] == nil, "\(after)")
        #expect(MetricsTests.samples(try MetricsTests.metrics(daemon))["accountd_reload_bundle_check_seconds"] == 0)
    }

    @Test func atStartUpTheDaemonExitsWithTheCheckWhereItStood() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [FleetStopTests.item, Self.endless])
        try Self.expectStartUpStopped(bundle, in: dir, at: "migrations/0002_step2.sql line 1")
    }

    @Test func aDeclarativeSchemasCheckIsBoundedToo() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.writeDeclarative(at: dir.sub("bundle"), version: 1, schema: FleetStopTests.item + "\n" + Self.endless)
        try Self.expectStartUpStopped(bundle, in: dir, at: "schema.sql line 3")
    }

    /// Starts the daemon on `bundle` and expects it to exit, the check stopped at `location`.
    static func expectStartUpStopped(_ bundle: String, in dir: borrowing TestDirectory, at location: String) throws {
        try Files.write("{}\n", to: dir.path + "/none.yaml")
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ACCOUNTD_") }
        environment.merge(Self.limit) { $1 }
        let daemon = try Binaries.start(
            Binaries.accountd,
            ["--data-root", dir.sub("data"), "--socket", dir.path + "/accountd.sock", "--schema", bundle, "--config", dir.path + "/none.yaml"],
            logDirectory: dir.path, environment: environment)
        defer { _ = E2E.stop(daemon) }
        let exited = waitUntil(timeout: 30) { !daemon.isRunning }
        #expect(exited, "the daemon still checks its bundle 30 s on")
        guard exited else { return }
        daemon.waitUntilExit()
        let log = ((try? String(contentsOfFile: dir.path + "/accountd.err", encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: dir.path + "/accountd.out", encoding: .utf8)) ?? "")
        #expect(daemon.terminationStatus != 0)
        #expect(log.contains("time limit of 4 s") && log.contains(location), "\(log.suffix(2000))")
    }
}
