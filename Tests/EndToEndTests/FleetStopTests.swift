import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A migration that runs long, or never ends, holds neither a reload nor SIGTERM (the review
/// of issue 34, findings 1 and 2), against the real daemon: SIGTERM stops a running migration,
/// which rolls back whole (the file at its old version with every row) and runs again at the
/// next start; a reload whose bundle check never ends is stopped by the next SIGHUP, and the
/// active account is brought to a new bundle in the background.
@Suite struct FleetStopTests {
    static let item = "CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER);"

    /// Version 2: a column, then a table whose making counts to `perRow` times the rows of
    /// `item` (`perRow` 0: at once; a few hundred over 300,000 rows: many minutes).
    static func step2(perRow: Int) -> String {
        """
        ALTER TABLE item ADD COLUMN note TEXT;
        CREATE TABLE pause AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < (SELECT count(*) FROM item) * \(perRow)) SELECT count(*) AS n FROM c;
        """
    }

    /// Waits until the daemon's metrics show a migration running for at least a second.
    static func waitForARunningMigration(_ daemon: DaemonProcess) throws -> Bool {
        try waitUntil(timeout: 60, interval: 0.1) {
            let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
            return samples["accountd_migrations_running"] == 1 && samples["accountd_migration_oldest_running_seconds"] ?? 0 >= 1
        }
    }

    @Test func sigtermStopsALongMigrationWhichRollsBackWhole() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [Self.item])
        let slow = try BundleFixture.write(at: dir.sub("slow"), steps: [Self.item, Self.step2(perRow: 1000)])
        let fast = try BundleFixture.write(at: dir.sub("fast"), steps: [Self.item, Self.step2(perRow: 0)])
        let dataRoot = dir.sub("data")
        try E2E.createOffline("big", dataRoot: dataRoot, bundle: v1)
        let path = dataRoot + "/accounts/big.sqlite"
        try E2E.sqlite3(
            path, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300000) INSERT INTO item SELECT i, i * 7 FROM c;")

        let daemon = try E2E.daemon(directory: dir.path, bundle: slow)
        defer { _ = E2E.stop(daemon) }
        let migrate = try Binaries.start(Binaries.accountctl, ["--socket", daemon.socket, "migrate", "big"], logDirectory: dir.path)
        defer { _ = E2E.stop(migrate) }
        #expect(try Self.waitForARunningMigration(daemon), "\(daemon.log.suffix(2000))")

        let sent = Date()
        let status = E2E.stop(daemon, timeout: 10)
        let took = Date().timeIntervalSince(sent)
        #expect(status == 0, "the daemon did not exit within 10 s of SIGTERM (\(took) s): \(daemon.log.suffix(2000))")
        #expect(took < 10)
        #expect(try E2E.userVersion(path) == 1, "rolled back whole: the file stays at its old version")
        #expect(try E2E.sql(path, "SELECT count(*), sum(code) FROM item;") == "300000|\(7 * 300000 * 300001 / 2)")
        #expect(try E2E.sql(path, "SELECT count(*) FROM sqlite_master WHERE name = 'pause';") == "0")
        #expect(daemon.log.contains("stopping 1 running migration"), "\(daemon.log.suffix(2000))")

        // The next start (with a release whose step runs at once) migrates it.
        let again = try E2E.daemon(directory: dir.path, bundle: fast)
        defer { _ = E2E.stop(again) }
        let migrated = try E2E.accountctl(["migrate", "big"], socket: again.socket)
        #expect(migrated.status == 0, "\(migrated.stdout) \(migrated.stderr)")
        #expect(try E2E.userVersion(path) == 2)
        #expect(try E2E.sql(path, "SELECT count(*) FROM item;") == "300000")
    }

    @Test func aReloadWaitsOnNoMigrationAndSigtermStillStops() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [Self.item])
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let pid = daemon.process.processIdentifier
        #expect(try daemon.client().callOne("switch alice").parameters["action"] == "created")
        let path = daemon.accountPath("alice")
        try E2E.sqlite3(path, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20000) INSERT INTO item SELECT i, i FROM c;")

        // A bundle whose check never ends (its step counts to three billion on an empty database).
        let step = bundle + "/migrations/0002_step2.sql"
        try Files.write(
            "CREATE TABLE big AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000000) SELECT max(x) AS m FROM c;\n",
            to: step)
        kill(pid, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("reload: checking the schema bundle") }, "\(daemon.log.suffix(2000))")
        Thread.sleep(forTimeInterval: 1)

        // The next SIGHUP stops that check and reloads the bundle now on disk: one whose step is
        // instant on an empty database and endless on alice's 20,000 rows.
        try Files.write(Self.step2(perRow: 1_000_000), to: step)
        kill(pid, SIGHUP)
        #expect(waitUntil(timeout: 15) { daemon.log.contains("reload: now serving bundle version 2") }, "\(daemon.log.suffix(3000))")
        #expect(daemon.log.contains("reload refused"), "the superseded check says so: \(daemon.log.suffix(3000))")

        // The active account migrates in the background: Status shows it, and a reload after is
        // acted on at once.
        let migrating = waitUntil(timeout: 15) { (try? daemon.client().callOne("status"))?.parameters["state"] == "migrating" }
        #expect(migrating, "\(daemon.log.suffix(2000))")
        kill(pid, SIGHUP)
        #expect(waitUntil(timeout: 15) { daemon.log.contains("the schema bundle is unchanged (version 2)") }, "\(daemon.log.suffix(3000))")

        let sent = Date()
        #expect(E2E.stop(daemon, timeout: 10) == 0, "\(daemon.log.suffix(2000))")
        #expect(Date().timeIntervalSince(sent) < 10)
        #expect(try E2E.userVersion(path) == 1)
        #expect(try E2E.sql(path, "SELECT count(*) FROM item;") == "20000")
    }
}
