import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Withdrawing a release by reloading the previous bundle stops it (hostile34b N2), against the
/// real daemon: a migration running under the withdrawn bundle is interrupted and rolls back
/// whole (the file at its old version with every row), a rollout begun under it begins no
/// further account and says so (exit 1), and the active account's background migration is
/// stopped the same way, the account opened under the bundle put back.
@Suite struct WithdrawnReleaseTests {
    /// Version 2 of ``FleetStopTests``'s bundle, counting far longer than any test runs on 20,000 rows.
    static let endless = FleetStopTests.step2(perRow: 1_000_000)
    static let rows = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20000) INSERT INTO item SELECT i, i * 7 FROM c;"

    /// Puts the release back: the bundle folder loses its version 2, and the daemon reloads.
    static func withdraw(_ bundle: String, daemon: DaemonProcess) throws {
        try FileManager.default.removeItem(atPath: bundle + "/migrations/0002_step2.sql")
        kill(daemon.process.processIdentifier, SIGHUP)
    }

    @Test func aRolloutUnderAWithdrawnBundleStopsAndItsMigrationRollsBack() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [FleetStopTests.item])
        let release = try BundleFixture.write(at: dir.sub("release"), steps: [FleetStopTests.item, Self.endless])
        let dataRoot = dir.sub("data")
        let accounts = ["a1", "a2", "a3", "a4"]
        for account in accounts {
            try E2E.createOffline(account, dataRoot: dataRoot, bundle: v1)
            _ = try E2E.sqlite3(dataRoot + "/accounts/\(account).sqlite", Self.rows)
        }
        let daemon = try E2E.daemon(directory: dir.path, bundle: release)
        defer { _ = E2E.stop(daemon) }
        let migrate = try Binaries.start(
            Binaries.accountctl, ["--socket", daemon.socket, "migrate", "--canary", "1"] + accounts, logDirectory: dir.path)
        defer { _ = E2E.stop(migrate) }
        #expect(try FleetStopTests.waitForARunningMigration(daemon), "\(daemon.log.suffix(2000))")

        try Self.withdraw(release, daemon: daemon)
        let ended = waitUntil(timeout: 30) { !migrate.isRunning }
        #expect(ended, "the rollout still runs 30 s after the reload withdrew its bundle: \(daemon.log.suffix(3000))")
        guard ended else { return }
        migrate.waitUntilExit()
        let output = (try? String(contentsOfFile: dir.path + "/accountctl.out", encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: dir.path + "/accountctl.err", encoding: .utf8)) ?? ""
        #expect(migrate.terminationStatus != 0, "\(output)")
        #expect(output.contains("a reload withdrew bundle version 2"), "\(output)")
        // The one running was interrupted, not failed (hostile34c H5).
        #expect(output.contains("4 accounts: 0 migrated, 0 current, 0 failed, 1 interrupted, 3 skipped"), "\(output)")
        #expect(!output.contains("migrated  a"), "\(output)")
        #expect(errors.contains("withdrew bundle version 2"), "\(errors)")
        for account in accounts {
            let path = dataRoot + "/accounts/\(account).sqlite"
            #expect(try E2E.userVersion(path) == 1, "\(account) stays at its version")
            #expect(try E2E.sql(path, "SELECT count(*) FROM item;") == "20000")
        }
        // Free at once under the bundle put back, and counted neither failed nor too new.
        let switched = try E2E.accountctl(["switch", "a1"], socket: daemon.socket)
        #expect(switched.status == 0, "\(switched.stdout) \(switched.stderr)")
        let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(samples[#"accountd_accounts_by_state{state="current"}"#] == 4, "\(samples)")
        #expect(samples["accountd_migrations_running"] == 0, "\(samples)")
        #expect(daemon.log.contains("bundle version 2 is withdrawn"), "\(daemon.log.suffix(3000))")
    }

    @Test func theActiveAccountsMigrationIsStoppedAndItOpensUnderTheBundlePutBack() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [FleetStopTests.item])
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        #expect(try daemon.client().callOne("switch alice").parameters["action"] == "created")
        let path = daemon.accountPath("alice")
        _ = try E2E.sqlite3(path, Self.rows)

        // The release: alice migrates in the background, and never ends on her rows.
        try Files.write(Self.endless, to: bundle + "/migrations/0002_step2.sql")
        kill(daemon.process.processIdentifier, SIGHUP)
        let migrating = waitUntil(timeout: 15) { (try? daemon.client().callOne("status"))?.parameters["state"] == "migrating" }
        #expect(migrating, "\(daemon.log.suffix(2000))")

        try Self.withdraw(bundle, daemon: daemon)
        let ready = waitUntil(timeout: 15) {
            let status = try? daemon.client().callOne("status")
            return status?.parameters["state"] == "ready" && status?.parameters["version"] == 1
        }
        #expect(ready, "alice is ready at version 1 soon after the reload: \(daemon.log.suffix(3000))")
        #expect(try E2E.userVersion(path) == 1)
        #expect(try E2E.sql(path, "SELECT count(*) FROM item;") == "20000")
        let set = try E2E.accountctl(["set", "user", "theme", "\"dark\""], socket: daemon.socket)
        #expect(set.status == 0, "usable at once: \(set.stdout) \(set.stderr)")
        let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(samples["accountd_migrations_running"] == 0, "\(samples)")
        #expect(samples[#"accountd_accounts_by_state{state="failed"}"#] ?? 0 == 0, "\(samples)")
    }

    /// hostile34c H5: an account the rollout never began (it waited for the active account's
    /// background migration) is `skipped`, not failed; the interrupted migrations are counted
    /// apart from real failures.
    @Test func aNeverBegunAccountIsSkippedAndInterruptedOnesAreNotFailures() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [FleetStopTests.item])
        let dataRoot = dir.sub("data")
        for account in ["a1", "a2", "a3"] {
            try E2E.createOffline(account, dataRoot: dataRoot, bundle: bundle)
            _ = try E2E.sqlite3(dataRoot + "/accounts/\(account).sqlite", Self.rows)
        }
        // a1's turn in the rollout waits for its background migration as long as the test runs.
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle, environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "120"])
        defer { _ = E2E.stop(daemon) }
        #expect(try daemon.client().callOne("switch a1").error == nil)
        // The release: a1, active, migrates in the background, and never ends on its rows.
        try Files.write(Self.endless, to: bundle + "/migrations/0002_step2.sql")
        kill(daemon.process.processIdentifier, SIGHUP)
        let migrating = waitUntil(timeout: 15) { (try? daemon.client().callOne("status"))?.parameters["state"] == "migrating" }
        #expect(migrating, "\(daemon.log.suffix(2000))")
        // The rollout: a2 and a3 begin; a1 waits for its background migration.
        let migrate = try Binaries.start(Binaries.accountctl, ["--socket", daemon.socket, "migrate", "a1", "a2", "a3"], logDirectory: dir.path)
        defer { _ = E2E.stop(migrate) }
        let running = waitUntil(timeout: 30) {
            let client = try? daemon.client()
            return ["a2", "a3"].allSatisfy { (try? client?.callOne("status \($0)"))??.parameters["state"] == "migrating" }
        }
        #expect(running, "\(daemon.log.suffix(2000))")
        Thread.sleep(forTimeInterval: 1)

        try Self.withdraw(bundle, daemon: daemon)
        let ended = waitUntil(timeout: 30) { !migrate.isRunning }
        #expect(ended, "\(daemon.log.suffix(3000))")
        guard ended else { return }
        migrate.waitUntilExit()
        let output = (try? String(contentsOfFile: dir.path + "/accountctl.out", encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: dir.path + "/accountctl.err", encoding: .utf8)) ?? ""
        #expect(migrate.terminationStatus == 1, "\(output)")
        #expect(output.contains("3 accounts: 0 migrated, 0 current, 0 failed, 2 interrupted, 1 skipped"), "\(output)")
        #expect(output.split(separator: "\n").contains { $0.hasPrefix("skipped") && $0.hasSuffix("a1") }, "\(output)")
        #expect(!errors.contains("failed to migrate") && errors.contains("2 interrupted"), "\(errors)")
        for account in ["a1", "a2", "a3"] {
            #expect(try E2E.userVersion(dataRoot + "/accounts/\(account).sqlite") == 1, "\(account) stays at its version")
        }
        let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(samples[#"accountd_accounts_by_state{state="failed"}"#] == 0, "\(samples)")
    }
}
