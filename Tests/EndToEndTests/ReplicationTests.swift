import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Replication with the real Litestream 0.5 and a `file://` replica standing for remote
/// storage: what Litestream had synced comes back with `pull` after the machine is lost,
/// whatever accountd did to the files meanwhile (create, migrate, Set, restore, remove).
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct ReplicationTests {
    static let createItems = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, n INTEGER);\n"
    /// A rebuild of the whole table (the 12-step way SQLite changes a column), with a new column.
    static let rebuildItems = """
        CREATE TABLE item_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL, doubled INTEGER NOT NULL DEFAULT 0);
        INSERT INTO item_new (id, name, n, doubled) SELECT id, name, n, n * 2 FROM item;
        DROP TABLE item;
        ALTER TABLE item_new RENAME TO item;

        """
    static let rows = 100_000

    /// One host under `dir`: the bundle (version 1 creates `item`), a daemon replicating to
    /// `dir/replica`, and the Litestream it configured.
    static func replicatingHost(
        _ dir: borrowing TestDirectory
    ) throws -> (replica: String, bundle: String, daemon: DaemonProcess, litestream: LitestreamProcess) {
        let replica = "file://" + dir.sub("replica")
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [Self.createItems], names: ["create_items"])
        let daemon = try E2E.replicatingDaemon(directory: dir.sub("host"), bundle: bundle, replica: replica, runDirectory: dir.sub("run"))
        let litestream = try LitestreamProcess(config: dir.sub("run/litestream.yml"), log: dir.sub("litestream"))
        return (replica, bundle, daemon, litestream)
    }

    /// Adds the rebuild as version 2 and reloads the daemon, waiting until it serves it.
    static func upgrade(_ daemon: DaemonProcess, bundle: String) throws {
        try Files.write(rebuildItems, to: bundle + "/migrations/0002_rebuild_items.sql")
        kill(daemon.process.processIdentifier, SIGHUP)
        let served = waitUntil(timeout: 30) { (try? daemon.client().callOne("info"))?.parameters["bundle"]?["version"] == 2 }
        try #require(served, "\(daemon.log.suffix(2000))")
    }

    static func set(_ client: RawClient, _ key: String, _ value: JSONValue, account: String) throws {
        let reply = try client.callOne(
            E2E.request("Set", [("namespace", "user"), ("key", .string(key)), ("value", value), ("account", .string(account))]))
        try #require(reply.error == nil, "\(reply.parameters)")
    }

    static func get(_ client: RawClient, _ key: String, account: String) throws -> JSONValue? {
        try client.callOne(E2E.request("Get", [("namespace", "user"), ("key", .string(key)), ("account", .string(account))])).parameters["value"]
    }

    @Test func aLostMachineComesBackAccountByAccountWithPull() throws {
        let dir = TestDirectory()
        let replica = "file://" + dir.sub("replica")
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [Self.createItems], names: ["create_items"])
        let daemon = try E2E.replicatingDaemon(directory: dir.sub("host-a"), bundle: bundle, replica: replica, runDirectory: dir.sub("run-a"))
        let config = dir.sub("run-a/litestream.yml")
        let written = try String(contentsOfFile: config, encoding: .utf8)
        #expect(written.contains("pattern: \"*.sqlite\"") && written.contains("watch: true"), "\(written)")
        #expect(written.contains(daemon.dataRoot + "/device.sqlite"), "\(written)")
        let litestream = try LitestreamProcess(config: config, log: dir.sub("litestream-a"))
        let client = try daemon.client()

        // alice: 100,000 rows at version 1, then a rebuild of them all to version 2.
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        try E2E.sql(daemon.accountPath("alice"), E2E.insertRows("item", count: Self.rows))
        let sum = try E2E.sql(daemon.accountPath("alice"), "SELECT sum(n) FROM item;")
        #expect(try client.callOne("switch bob").parameters["action"] == "created")
        // Synced once, alice carries Litestream's own tables from here on.
        try litestream.syncAndWait(daemon.accountPath("alice"))
        #expect(try E2E.sql(daemon.accountPath("alice"), "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_litestream\\_%' ESCAPE '\\';") == "2")
        try Self.upgrade(daemon, bundle: bundle)
        let migrated = try client.callOne("migrate alice")
        #expect(migrated.parameters["migrated"] == 1, "\(migrated.parameters) \(daemon.log.suffix(3000))")

        // bob (active, brought to version 2 by the reload): Sets from 32 clients at once.
        let failures = E2E.Locked<[String]>([])
        let socket = daemon.socket
        DispatchQueue.concurrentPerform(iterations: 32) { index in
            do {
                let own = try RawClient(socket: socket)
                for step in 0..<5 { try Self.set(own, "k\(index)-\(step)", .int(Int64(index * 100 + step)), account: "bob") }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.current.isEmpty, "\(failures.current)")

        // carol: a snapshot, a change, then a restore of the snapshot.
        #expect(try client.callOne("switch carol").parameters["action"] == "created")
        try Self.set(client, "color", "red", account: "carol")
        #expect(try client.callOne("snapshot carol").error == nil)
        try Self.set(client, "color", "blue", account: "carol")
        _ = try client.callOne("switch bob")
        let restored = try client.callOne("restore carol")
        #expect(restored.error == nil, "\(restored.parameters)")
        #expect(try Self.get(client, "color", account: "carol") == "red")

        // dave: removed after a last change; the removal syncs it a last time first.
        #expect(try client.callOne("switch dave").parameters["action"] == "created")
        try Self.set(client, "last", "words", account: "dave")
        _ = try client.callOne("switch bob")
        #expect(litestream.waitUntilReplicating(daemon.accountPath("dave")), "\(litestream.log.suffix(3000))")
        let removed = try client.callOne("remove dave")
        #expect(removed.error == nil, "\(removed.parameters)")

        // accountctl replication: Litestream's own view, per account.
        let report = try E2E.accountctl(["--json", "replication"], socket: daemon.socket)
        let parsed = try JSONParser.parse(report.stdout)
        #expect(parsed["enabled"] == true && parsed["litestream"] == true, "\(report.stdout) \(report.stderr)")
        let accounts = parsed["accounts"]?.arrayValue ?? []
        #expect(Set(accounts.compactMap { $0["account"]?.stringValue }) == ["alice", "bob", "carol"], "\(report.stdout)")
        #expect(accounts.allSatisfy { $0["replicated"] == true && $0["status"] == "replicating" }, "\(report.stdout)")

        // Everything acknowledged is shipped, then the machine is lost: both processes die, the data root goes.
        for account in ["alice", "bob", "carol"] { try litestream.syncAndWait(daemon.accountPath(account)) }
        daemon.stop(signal: SIGKILL)
        litestream.stop(signal: SIGKILL)
        try FileManager.default.removeItem(atPath: daemon.dataRoot)

        // Host B: alice and bob with `accountd pull` (no daemon), carol and dave through a daemon with replication.
        let rootB = dir.sub("host-b/data")
        for account in ["alice", "bob"] {
            let pulled = try E2E.pullOffline(account, replica: replica, dataRoot: rootB)
            #expect(pulled.status == 0, "\(account): \(pulled.stderr)")
        }
        let again = try E2E.pullOffline("alice", replica: replica, dataRoot: rootB)
        #expect(again.status == 1 && again.stderr.contains("already has a file"), "\(again.stderr)")
        let hostB = try E2E.replicatingDaemon(directory: dir.sub("host-b"), bundle: bundle, replica: replica, runDirectory: dir.sub("run-b"))
        for account in ["carol", "dave"] {
            let pulled = try E2E.accountctl(["pull", account], socket: hostB.socket)
            #expect(pulled.status == 0, "\(account): \(pulled.stdout) \(pulled.stderr)")
        }
        let refused = try E2E.accountctl(["pull", "carol"], socket: hostB.socket)
        #expect(refused.status == 1 && refused.stderr.contains("AccountExists"), "\(refused.stderr)")
        let nothing = try hostB.client().callOne("pull nobody")
        #expect(nothing.error == .accountNotFound, "\(nothing)")

        // Each account is back at its version, with every row and every preference, whole.
        for account in ["alice", "bob", "carol", "dave"] {
            #expect(try E2E.userVersion(hostB.accountPath(account)) == 2, "\(account)")
            #expect(try E2E.sql(hostB.accountPath(account), "PRAGMA integrity_check;") == "ok", "\(account)")
            #expect(try E2E.sql(hostB.accountPath(account), "PRAGMA journal_mode;") == "wal", "\(account)")
        }
        let alice = hostB.accountPath("alice")
        #expect(try E2E.sql(alice, "SELECT count(*), sum(n), sum(doubled) = 2 * sum(n) FROM item;") == "\(Self.rows)|\(sum)|1")
        let clientB = try hostB.client()
        #expect(try clientB.callOne("switch alice").parameters["action"] == "opened")
        let keys = try clientB.callOne(E2E.request("Keys", [("namespace", "user"), ("account", "bob")])).parameters["keys"]?.arrayValue ?? []
        #expect(keys.count == 32 * 5)
        #expect(try Self.get(clientB, "k31-4", account: "bob") == .int(3104))
        #expect(try Self.get(clientB, "color", account: "carol") == "red")
        #expect(try Self.get(clientB, "last", account: "dave") == "words")
        let verified = try clientB.callOne("verify alice")
        #expect(verified.parameters["healthy"] == true, "\(verified.parameters)")
    }

    /// Litestream holds a read transaction on every file it replicates: closing a preference
    /// table (more accounts written than stay open, or the daemon stopping) must not wait for it.
    @Test func closingPreferenceTablesDoesNotWaitForLitestream() throws {
        let dir = TestDirectory()
        let (_, _, daemon, litestream) = try Self.replicatingHost(dir)
        let client = try daemon.client()
        let accounts = (1...10).map { "user\($0)" }
        for account in accounts {
            #expect(try client.callOne("switch \(account)").parameters["action"] == "created")
            try litestream.syncAndWait(daemon.accountPath(account))
        }
        let started = Date()
        for account in accounts { try Self.set(client, "k", .string(account), account: account) }
        let writing = Date().timeIntervalSince(started)
        #expect(writing < 5, "10 Sets, 2 preference tables closed, took \(writing) s")
        let stopping = Date()
        #expect(daemon.stop() == 0)
        let stopped = Date().timeIntervalSince(stopping)
        #expect(stopped < 5, "stopping took \(stopped) s")
    }

    /// Replication turned on by a reload: Litestream's configuration is written at once, and
    /// `Replication` reports it (Litestream not running yet).
    @Test func aReloadWritesTheLitestreamConfiguration() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        _ = try daemon.client().callOne("switch alice")
        let off = try JSONParser.parse(try E2E.accountctl(["--json", "replication"], socket: daemon.socket).stdout)
        #expect(off["enabled"] == false)
        let config = dir.sub("run/litestream.yml")
        try Files.write(
            "replication:\n  litestream:\n    replica: file://\(dir.sub("replica"))\n    config: \(config)\n    syncIntervalSeconds: 2\n",
            to: dir.sub("none.yaml"))
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: config) }, "\(daemon.log.suffix(2000))")
        let text = try String(contentsOfFile: config, encoding: .utf8)
        #expect(text.contains("sync-interval: 2s") && text.contains("url: \"file://\(dir.sub("replica"))\""), "\(text)")
        let on = try E2E.accountctl(["replication"], socket: daemon.socket)
        #expect(on.stdout.contains("Replica: file://\(dir.sub("replica"))"), "\(on.stdout)")
        #expect(on.stdout.contains("Litestream is not answering"), "\(on.stdout)")
        #expect(on.status == 1 && on.stderr.contains("Litestream is not running"), "\(on.stderr)")
        #expect(on.stdout.contains("alice") && on.stdout.contains("not-replicated"), "\(on.stdout)")
    }

    @Test func aKillDuringAMigrationLeavesTheReplicaAtTheOldOrTheNewVersionWhole() throws {
        let dir = TestDirectory()
        let (replica, bundle, daemon, litestream) = try Self.replicatingHost(dir)
        let client = try daemon.client()
        _ = try client.callOne("switch alice")
        try E2E.sql(daemon.accountPath("alice"), E2E.insertRows("item", count: Self.rows))
        let sum = try E2E.sql(daemon.accountPath("alice"), "SELECT sum(n) FROM item;")
        _ = try client.callOne("switch bob")
        try litestream.syncAndWait(daemon.accountPath("alice"))
        try Self.upgrade(daemon, bundle: bundle)

        // The migration starts on its own connection; the daemon dies once its snapshot is taken.
        let socket = daemon.socket
        Thread.detachNewThread { _ = try? RawClient(socket: socket).callOne("migrate alice") }
        let snapshots = daemon.dataRoot + "/snapshots/alice"
        let started = waitUntil(timeout: 30, interval: 0.001) {
            ((try? FileManager.default.contentsOfDirectory(atPath: snapshots)) ?? []).contains { $0.hasSuffix("-before-migrate.sqlite") }
        }
        #expect(started, "\(daemon.log.suffix(2000))")
        daemon.stop(signal: SIGKILL)
        // Litestream outlives accountd: what it ships now is what was committed.
        try litestream.syncAndWait(daemon.accountPath("alice"))
        litestream.stop()

        let fresh = dir.sub("fresh")
        let pulled = try E2E.pullOffline("alice", replica: replica, dataRoot: fresh)
        try #require(pulled.status == 0, "\(pulled.stderr)")
        let path = fresh + "/accounts/alice.sqlite"
        let version = try E2E.userVersion(path)
        #expect(version == 1 || version == 2, "\(pulled.stdout)")
        #expect(try E2E.sql(path, "PRAGMA integrity_check;") == "ok")
        #expect(try E2E.sql(path, "SELECT count(*), sum(n) FROM item;") == "\(Self.rows)|\(sum)")
        let hasNewColumn = try E2E.sql(path, "SELECT count(*) FROM pragma_table_info('item') WHERE name = 'doubled';") == "1"
        #expect(hasNewColumn == (version == 2), "version \(version.map(String.init) ?? "?") with the new column: \(hasNewColumn)")
        print("replica after kill -9 during the migration: version \(version.map(String.init) ?? "?")")
    }
}
