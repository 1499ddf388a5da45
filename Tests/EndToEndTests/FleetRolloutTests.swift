import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A release rolled out over a fleet, watched, and rolled back (issue 34), against the real
/// daemon: while it runs the metrics and `Status` show the migration in progress; an
/// account that fails is counted `failed` with no name in any label, the log names it,
/// and the alert rule fires; `Migrate {rollbackTo}` under the previous bundle returns every
/// migrated account to its version with every row. Accounts are created online with
/// `create`, the canary chosen by name, accounts left out with `exclude`.
@Suite struct FleetRolloutTests {
    /// Version 2 adds a unique index (an account holding a duplicate code fails) and a
    /// table whose making counts to forty million for an account holding code 666 (a
    /// migration slow enough to be watched: about 5 s on a quiet 2-core machine; ten million
    /// took 1.3 s there, and ended before the metrics taken a second into it were read).
    static let steps = [
        "CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER);",
        """
        CREATE UNIQUE INDEX item_code ON item(code);
        CREATE TABLE pause AS WITH RECURSIVE c(x) AS (SELECT 1 WHERE EXISTS (SELECT 1 FROM item WHERE code = 666) UNION ALL SELECT x + 1 FROM c WHERE x < 40000000) SELECT count(*) AS n FROM c;
        """,
    ]
    static let names = ["a0", "a1", "a2", "a3", "a4"]

    static func rows(_ daemon: DaemonProcess, _ name: String) throws -> String {
        try E2E.sql(daemon.accountPath(name), "SELECT id, code FROM item ORDER BY id;")
    }

    @Test func aRolloutIsWatchedAlertedAndRolledBack() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: Array(Self.steps.prefix(1)))
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: Self.steps)
        for name in Self.names {
            try E2E.createOffline(name, dataRoot: dir.sub("data"), bundle: v1)
            let rows = name == "a1" ? "(1, 666), (2, 8)" : name == "a3" ? "(1, 7), (2, 7)" : "(1, 7), (2, 8)"
            try E2E.sqlite3(dir.sub("data") + "/accounts/\(name).sqlite", "INSERT INTO item VALUES \(rows);")
        }
        var daemon = try E2E.daemon(directory: dir.path, bundle: v2, environment: ["ACCOUNTD_ACCOUNTS_MIGRATE_CONCURRENCY": "1"])
        defer { _ = E2E.stop(daemon) }
        let before = try Dictionary(uniqueKeysWithValues: Self.names.map { ($0, try Self.rows(daemon, $0)) })
        let metricsFile = dir.sub("accountd.prom")

        // The rollout runs in the background; a1's migration takes a while.
        let rollout = try Binaries.start(
            Binaries.accountctl, ["--socket", daemon.socket, "migrate", "--all"], logDirectory: dir.path)
        var running: [String: Double] = [:]
        let seen = try waitUntil(timeout: 120, interval: 0.05) {
            running = MetricsTests.samples(try MetricsTests.metrics(daemon))
            return running["accountd_migrations_running"] == 1 && running["accountd_migration_oldest_running_seconds"] ?? 0 >= 1
        }
        #expect(seen, "no migration seen running for a second: \(running)")
        // The daemon's own Status says so, though no account of the caller migrates.
        let status = try daemon.client().callOne("status")
        #expect(status.parameters["state"] == "idle" && status.parameters["migrationsRunning"] == 1, "\(status.encoded())")
        #expect(try E2E.accountctl(["metrics", "--textfile", metricsFile], socket: daemon.socket).status == 0)
        if let firing = try FleetMetricsTests.firing(metricsFile, thresholds: ["AccountdMigrationStuck": 0.5]) {
            #expect(firing.contains("AccountdMigrationStuck"), "\(firing)")
        }
        rollout.waitUntilExit()
        #expect(rollout.terminationStatus == 1, "a3 fails")

        // After it: a3 failed, counted without its name; the log names it, its versions and the error.
        #expect(try E2E.accountctl(["metrics", "--textfile", metricsFile], socket: daemon.socket).status == 0)
        let text = try String(contentsOfFile: metricsFile, encoding: .utf8)
        let after = MetricsTests.samples(text)
        #expect(after[#"accountd_accounts_by_state{state="failed"}"#] == 1, "\(text)")
        #expect(after[#"accountd_accounts_by_state{state="current"}"#] == 4, "\(text)")
        #expect(after[#"accountd_migration_failures_total{error="MigrationFailed"}"#] == 1, "\(text)")
        #expect(after["accountd_migrations_running"] == 0 && after["accountd_migration_oldest_running_seconds"] == 0)
        #expect(!Self.names.contains { text.contains("\"\($0)\"") }, "no account name in a label: \(text)")
        let logged = daemon.log.split(separator: "\n").contains { line in
            line.contains("a3") && line.contains("MigrationFailed") && line.contains("version 1")
        }
        #expect(logged, "\(daemon.log.suffix(3000))")
        if let firing = try FleetMetricsTests.firing(metricsFile, thresholds: ["AccountdMigrationStuck": 0.5]) {
            #expect(firing == ["AccountdAccountFailed"], "\(firing)")
        }

        // A write after the release: set aside by the rollback, not lost.
        #expect(try E2E.accountctl(["exec", "--account", "a0", "INSERT INTO item VALUES (3, 9)"], socket: daemon.socket).status == 0)
        // Under the new bundle a rollback is refused: the accounts would be migrated again.
        let refused = try E2E.accountctl(["migrate", "--all", "--rollback-to", "1"], socket: daemon.socket)
        #expect(refused.status != 0 && refused.stderr.contains("previous release's bundle"), "\(refused.stderr)")
        #expect(try E2E.userVersion(daemon.accountPath("a0")) == 2)

        // The previous release's bundle, then the rollback: every migrated account is back at
        // version 1 with its rows; a3 never left it.
        _ = E2E.stop(daemon)
        daemon = try E2E.daemon(directory: dir.path, bundle: v1)
        let back = try E2E.accountctl(["migrate", "--all", "--rollback-to", "1"], socket: daemon.socket)
        #expect(back.status == 0, "\(back.stdout)\(back.stderr)")
        #expect(back.stdout.contains("5 accounts: 0 migrated, 4 restored, 1 current, 0 failed"), "\(back.stdout)")
        for name in Self.names {
            #expect(try E2E.userVersion(daemon.accountPath(name)) == 1, "\(name)")
            #expect(try Self.rows(daemon, name) == before[name], "\(name)")
        }
        let snapshots = try daemon.client().callOne(#"{"method":"io.accountd.Snapshots","parameters":{"account":"a0"}}"#)
        let saved = snapshots.parameters["snapshots"]?.arrayValue?.compactMap { $0["snapshot"]?.stringValue }.first { $0.contains("before-restore") }
        let savedPath = daemon.dataRoot + "/snapshots/a0/" + (saved ?? "missing") + ".sqlite"
        #expect(try E2E.sql(savedPath, "SELECT code FROM item WHERE id = 3;") == "9", "the write after the release is kept aside")
        // Resumable: again, nothing to do.
        let again = try E2E.accountctl(["migrate", "--all", "--rollback-to", "1"], socket: daemon.socket)
        #expect(again.status == 0 && again.stdout.contains("5 accounts: 0 migrated, 5 current, 0 failed"), "\(again.stdout)")
        // a3 failed the withdrawn release and was not opened since: still counted failed
        // (hostile34b N3) until a Migrate opens it under the bundle in force.
        #expect(MetricsTests.samples(try MetricsTests.metrics(daemon))[#"accountd_accounts_by_state{state="failed"}"#] == 1)
        #expect(try E2E.accountctl(["migrate", "--all"], socket: daemon.socket).status == 0)
        #expect(MetricsTests.samples(try MetricsTests.metrics(daemon))[#"accountd_accounts_by_state{state="current"}"#] == 5)
    }

    @Test func migrateCreatesNamedAccountsWithAChosenCanaryAndExclusions() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_ACCOUNTS_MIGRATE_CONCURRENCY": "1"])
        defer { _ = E2E.stop(daemon) }
        // Without create, a missing account fails as before.
        let plain = try E2E.accountctl(["migrate", "u0001"], socket: daemon.socket)
        #expect(plain.status == 1 && plain.stdout.contains("AccountNotFound"), "\(plain.stdout)")

        let replies = try daemon.client().call(
            #"{"method":"io.accountd.Migrate","parameters":{"accounts":["u0001","u0002","u0003"],"create":true,"canaryAccounts":["u0003"],"exclude":["u0002"]},"more":true}"#)
        let order = replies.dropLast().compactMap { $0.parameters["account"]?.stringValue }
        #expect(order == ["u0003", "u0001"], "the canary first, u0002 left out: \(order)")
        #expect(replies.dropLast().allSatisfy { $0.parameters["result"] == "created" && $0.parameters["version"] == 3 })
        let summary = try #require(replies.last)
        #expect(summary.parameters["created"] == 2 && summary.parameters["count"] == 2, "\(summary.encoded())")
        #expect(FileManager.default.fileExists(atPath: daemon.accountPath("u0001")))
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("u0002")))
        #expect(try daemon.client().callOne("status").parameters["active"] == .null, "no switch")

        // A canary naming an account that does not exist is refused before anything begins
        // (issue 34's review); its failure stopping the rest is held in RolloutTests.
        let stopped = try E2E.accountctl(["migrate", "--canary-accounts", "ghost", "u0001", "u0003"], socket: daemon.socket)
        #expect(stopped.status == 1 && stopped.stderr.contains("ghost") && stopped.stderr.contains("nothing was migrated"), "\(stopped.stderr)")
        // Contradictions are refused before anything begins.
        let both = try daemon.client().callOne(#"{"method":"io.accountd.Migrate","parameters":{"all":true,"canary":1,"canaryAccounts":["u0001"]}}"#)
        #expect(both.error == .invalidParameter && both.parameters["parameter"] == "canaryAccounts", "\(both.encoded())")
        let createBack = try daemon.client().callOne(#"{"method":"io.accountd.Migrate","parameters":{"accounts":["x"],"create":true,"rollbackTo":1}}"#)
        #expect(createBack.error == .invalidParameter && createBack.parameters["parameter"] == "create", "\(createBack.encoded())")
        // accountctl: --create provisions, and reports each account.
        let made = try E2E.accountctl(["migrate", "--create", "u0002", "u0003"], socket: daemon.socket)
        #expect(made.status == 0 && made.stdout.contains("created   u0002") && made.stdout.contains("current   u0003"), "\(made.stdout)")
    }

    @Test func theWALIsCutBackAndListShowsTheDiskApart() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: Array(Self.steps.prefix(1)))
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle, environment: ["ACCOUNTD_ACCOUNTS_WAL_MAX_BYTES": "1048576", "ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "120000"])
        defer { _ = E2E.stop(daemon) }
        #expect(try daemon.client().callOne("switch alice").error == nil)
        // One large transaction (about 20 MB), then small ones: the WAL goes back under the bound.
        let big = try E2E.accountctl(
            ["exec", "INSERT INTO item (code) SELECT randomblob(100) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) SELECT x FROM c)"],
            socket: daemon.socket)
        #expect(big.status == 0, "\(big.stderr)")
        for code in 0..<3 {
            #expect(try E2E.accountctl(["exec", "INSERT INTO item (code) VALUES (\(-1 - code))"], socket: daemon.socket).status == 0)
        }
        let wal = (try? FileManager.default.attributesOfItem(atPath: daemon.accountPath("alice") + "-wal")[.size] as? Int) ?? 0
        #expect(wal <= 1_048_576 + 65_536, "the WAL stays at \(wal) bytes")

        let list = try E2E.accountctl(["list", "--details", "--json"], socket: daemon.socket)
        let entry = try #require(try E2E.jsonLines(list.stdout).first)
        #expect(entry["fileBytes"]?.intValue ?? 0 > 0 && entry["walBytes"] != nil && entry["snapshots"] == 0 && entry["litestreamBytes"] == 0, "\(list.stdout)")
        let status = try E2E.accountctl(["status", "alice"], socket: daemon.socket)
        #expect(status.stdout.contains("wal") && status.stdout.contains("litestream state"), "\(status.stdout)")
    }
}
