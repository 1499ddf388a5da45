import AccountdProtocol
import Foundation
import GRDB
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// The migration engine: atomicity, checks before commit, history, snapshots and restore.
@Suite struct MigrationTests {
    func makeStore(_ dir: borrowing TestDirectory, _ name: String, steps: [String], schema: String? = nil) throws -> AccountStore {
        let bundle = try BundleFixture.write(at: dir.sub(name), steps: steps, schema: schema)
        return AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle))
    }

    func rows(_ path: String, _ sql: String) throws -> [[DatabaseValue]] {
        try DatabaseQueue(path: path).read { db in try Row.fetchAll(db, sql: sql).map { Array($0.databaseValues) } }
    }

    @Test func failingStepRollsBackEverythingAndNamesTheLine() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let v1 = ["CREATE TABLE user_info (user_id INTEGER PRIMARY KEY, user_name TEXT);"]
        _ = try makeStore(dir, "b1", steps: v1).open(alice)
        let path = dir.sub("root") + "/accounts/alice.sqlite"
        try DatabaseQueue(path: path).write { try $0.execute(sql: "INSERT INTO user_info VALUES (1, 'Ann'), (2, 'Ann')") }
        // Step 3 runs on an empty database (the bundle loads) but fails on alice's rows.
        let steps = v1 + [
            "ALTER TABLE user_info ADD COLUMN age INTEGER;",
            "CREATE TABLE extra (id INTEGER PRIMARY KEY);\nINSERT INTO extra VALUES (1);\n\nCREATE UNIQUE INDEX user_name_unique ON user_info(user_name);\n",
        ]
        let store = try makeStore(dir, "b3", steps: steps)
        let error = #expect(throws: AccountdError.self) { try store.open(alice) }
        #expect(error?.kind == .migrationFailed)
        #expect(error?.file == "migrations/0003_step3.sql")
        #expect(error?.line == 4)
        #expect(error?.message.contains("UNIQUE constraint failed: user_info.user_name") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("stays at version 1") == true)
        // Nothing of steps 2 and 3 remains.
        let facts = try DatabaseQueue(path: path).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version"), try db.tableExists("extra"), try db.columns(in: "user_info").count)
        }
        #expect(facts.0 == 1)
        #expect(facts.1 == false)
        #expect(facts.2 == 2)
        #expect(try rows(path, "SELECT user_name FROM user_info") == [["Ann".databaseValue], ["Ann".databaseValue]])
    }

    @Test func foreignKeyViolationFailsTheMigration() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let v1 = ["CREATE TABLE parent (id INTEGER PRIMARY KEY);\nCREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id));"]
        _ = try makeStore(dir, "b1", steps: v1).open(alice)
        let path = dir.sub("root") + "/accounts/alice.sqlite"
        try DatabaseQueue(path: path).write { try $0.execute(sql: "INSERT INTO parent VALUES (1); INSERT INTO child VALUES (10, 1)") }
        let bad = v1 + ["PRAGMA foreign_keys = ON;\nDELETE FROM parent;"]
        let error = #expect(throws: AccountdError.self) { try makeStore(dir, "bad", steps: bad).open(alice) }
        #expect(error?.kind == .migrationFailed)
        #expect(error?.details.first?.contains("table child row 10") == true)
        #expect(try rows(path, "SELECT count(*) FROM parent") == [[1.databaseValue]])

        // A bundle may relax the check.
        let relaxed = v1 + ["-- accountd: allow-foreign-key-violations\nDELETE FROM parent;"]
        let outcome = try makeStore(dir, "relaxed", steps: relaxed).open(alice)
        #expect(outcome.action == .migrated)
    }

    @Test func schemaEditedBehindTheDaemonFailsTheMigration() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let v1 = ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"]
        _ = try makeStore(dir, "b1", steps: v1).open(alice)
        let path = dir.sub("root") + "/accounts/alice.sqlite"
        try DatabaseQueue(path: path).write { try $0.execute(sql: "CREATE INDEX sneaky ON notes(body)") }
        let error = #expect(throws: AccountdError.self) {
            try makeStore(dir, "b2", steps: v1 + ["ALTER TABLE notes ADD COLUMN title TEXT;"]).open(alice)
        }
        #expect(error?.kind == .migrationFailed)
        #expect(error?.details.contains { $0.contains("index sneaky") } == true, "\(error?.details ?? [])")
        #expect(try rows(path, "PRAGMA user_version") == [[1.databaseValue]])
    }

    @Test func aSchemaFoundRightOnceDoesNotExcuseAnotherFile() throws {
        // The store remembers schemas that matched the target (MatchedSchemas); a second
        // file with an index added behind the daemon's back must still be refused.
        let dir = TestDirectory()
        let (alice, bob) = (try AccountName("alice"), try AccountName("bob"))
        let v1 = ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"]
        let old = try makeStore(dir, "b1", steps: v1)
        _ = try old.open(alice)
        _ = try old.open(bob)
        let bobPath = dir.sub("root") + "/accounts/bob.sqlite"
        try DatabaseQueue(path: bobPath).write { try $0.execute(sql: "CREATE INDEX sneaky ON notes(body)") }
        let store = try makeStore(dir, "b2", steps: v1 + ["ALTER TABLE notes ADD COLUMN title TEXT;"])
        #expect(try store.open(alice).action == .migrated)
        let error = #expect(throws: AccountdError.self) { try store.open(bob) }
        #expect(error?.kind == .migrationFailed)
        #expect(error?.details.contains { $0.contains("index sneaky") } == true, "\(error?.details ?? [])")
        #expect(try rows(bobPath, "PRAGMA user_version") == [[1.databaseValue]])
        // Dropping the stray index lets bob migrate to the schema alice has.
        try DatabaseQueue(path: bobPath).write { try $0.execute(sql: "DROP INDEX sneaky") }
        #expect(try store.open(bob).action == .migrated)
    }

    @Test func foreignKeyCascadeChildrenSurviveAParentRebuild() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let v1 = [
            """
            CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE book (id INTEGER PRIMARY KEY, author_id INTEGER NOT NULL REFERENCES author(id) ON DELETE CASCADE, title TEXT);
            """
        ]
        _ = try makeStore(dir, "b1", steps: v1).open(alice)
        let path = dir.sub("root") + "/accounts/alice.sqlite"
        try DatabaseQueue(path: path).write { db in
            for a in 1...20 {
                try db.execute(sql: "INSERT INTO author VALUES (?, ?)", arguments: [a, "author \(a)"])
                for b in 1...5 { try db.execute(sql: "INSERT INTO book(author_id, title) VALUES (?, ?)", arguments: [a, "book \(b)"]) }
            }
        }
        // The documented 12-step rebuild: new table, copy, DROP the parent, rename.
        let rebuild = """
            CREATE TABLE author_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, born INTEGER);
            INSERT INTO author_new (id, name) SELECT id, name FROM author;
            DROP TABLE author;
            ALTER TABLE author_new RENAME TO author;
            """
        let outcome = try makeStore(dir, "b2", steps: v1 + [rebuild]).open(alice)
        #expect(outcome.action == .migrated)
        #expect(try rows(path, "SELECT count(*) FROM book") == [[100.databaseValue]])
        #expect(try rows(path, "SELECT count(*) FROM author") == [[20.databaseValue]])
        #expect(try DatabaseQueue(path: path).read { try Row.fetchAll($0, sql: "PRAGMA foreign_key_check") }.isEmpty)
    }

    @Test func editedMigrationsAreReported() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let steps = ["CREATE TABLE t (a);", "CREATE INDEX t_a ON t(a);"]
        _ = try makeStore(dir, "b", steps: steps).open(alice)
        let edited = ["CREATE TABLE t (a); -- now with a comment", "CREATE INDEX t_a ON t(a);"]
        let store = try makeStore(dir, "b-edited", steps: edited)
        let outcome = try store.open(alice)
        #expect(outcome.editedMigrations.map(\.name) == ["0001_step1"])
        #expect(store.status(alice).editedMigrations.map(\.version) == [1])
        #expect(try store.verify(alice).editedMigrations.count == 1)
        #expect(try makeStore(dir, "b-same", steps: steps).verify(alice).isHealthy)
    }

    @Test func snapshotsCanBeListedAndRestored() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let v1 = ["CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);"]
        _ = try makeStore(dir, "b1", steps: v1).open(alice)
        let path = dir.sub("root") + "/accounts/alice.sqlite"
        try DatabaseQueue(path: path).write { try $0.execute(sql: "INSERT INTO t VALUES (1, 'one')") }
        let store = try makeStore(dir, "b2", steps: v1 + ["UPDATE t SET v = upper(v);"])
        let outcome = try store.open(alice)
        #expect(try rows(path, "SELECT v FROM t") == [["ONE".databaseValue]])
        let listed = store.listSnapshots(alice)
        #expect(listed.count == 1)
        #expect(listed.first?.version == 1)
        #expect(listed.first?.name == outcome.snapshot?.name)
        // A snapshot is one self-contained rollback-journal file (header bytes 18 and 19 are 1,
        // not WAL's 2) holding the rows as they were, and reading it leaves nothing beside it.
        let copy = try #require(listed.first?.path)
        let header = try #require(FileManager.default.contents(atPath: copy))
        #expect(Array(header[18...19]) == [1, 1])
        #expect(try rows(copy, "SELECT v FROM t") == [["one".databaseValue]])
        #expect(try rows(copy, "PRAGMA journal_mode") == [["delete".databaseValue]])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.sub("root") + "/snapshots/alice") == [listed[0].name + ".sqlite"])

        let restored = try store.restore(alice, snapshot: listed.first!.name)
        #expect(restored.restored.version == 1)
        #expect(restored.saved?.version == 2)
        #expect(try rows(path, "SELECT v FROM t") == [["one".databaseValue]])
        #expect(try rows(path, "PRAGMA user_version") == [[1.databaseValue]])
        #expect(Files.mode(path) == 0o600)
        // The file it replaced was kept.
        #expect(store.listSnapshots(alice).map(\.version).sorted() == [1, 2])
        // And the restored account migrates again on the next open.
        #expect(try store.open(alice).action == .migrated)

        let missing = #expect(throws: AccountdError.self) { try store.restore(alice, snapshot: "no-such-snapshot") }
        #expect(missing?.kind == .snapshotNotFound)
    }

    @Test func snapshotRetentionKeepsTheNewest() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let bundle = try BundleFixture.write(at: dir.sub("b"), steps: ["CREATE TABLE t (a);"])
        var options = AccountStore.Options()
        options.snapshotsToKeep = 2
        let store = AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle), options: options)
        _ = try store.open(alice)
        var names: [String] = []
        for _ in 0..<4 {
            names.append(try store.takeSnapshot(alice).name)
            Thread.sleep(forTimeInterval: 0.005)  // the clock must advance, so the snapshots' times differ
        }
        #expect(store.listSnapshots(alice).map(\.name) == names.suffix(2).reversed())
    }

    @Test func creationFromSchemaSQLAndChainGiveTheSameFile() throws {
        let dir = TestDirectory()
        let sample = try SchemaBundle.load(from: Repository.sampleBundle)
        #expect(sample.creationMethod == .schemaSQL)
        #expect(sample.targetVersion == 3)
        let store = AccountStore(root: try DataRoot(dir.sub("root")), bundle: sample)
        let outcome = try store.open(try AccountName("alice"))
        #expect(outcome.creationMethod == .schemaSQL)
        let history = try rows(store.root.accountPath(try AccountName("alice")), "SELECT method FROM accountd_migrations")
        #expect(history.count == 3)
        #expect(history.allSatisfy { $0 == ["created:schema.sql".databaseValue] })
    }

    @Test func templateIsCopiedWithItsSeedRows() throws {
        let dir = TestDirectory()
        let bundlePath = try BundleFixture.write(
            at: dir.sub("b"), steps: ["CREATE TABLE country (code TEXT PRIMARY KEY, name TEXT);"])
        try Files.sqlite3(
            bundlePath + "/template.sqlite",
            "CREATE TABLE country (code TEXT PRIMARY KEY, name TEXT); INSERT INTO country VALUES ('fr', 'France'), ('jp', 'Japan');")
        let bundle = try SchemaBundle.load(from: bundlePath)
        #expect(bundle.creationMethod == .template)
        let store = AccountStore(root: try DataRoot(dir.sub("root")), bundle: bundle)
        let outcome = try store.open(try AccountName("alice"))
        #expect(outcome.creationMethod == .template)
        let path = store.root.accountPath(try AccountName("alice"))
        #expect(try rows(path, "SELECT code FROM country ORDER BY code") == [["fr".databaseValue], ["jp".databaseValue]])
        #expect(try rows(path, "PRAGMA application_id") == [[0x6163_6374.databaseValue]])
        #expect(Files.mode(path) == 0o600)
    }

    @Test func concurrentOpensOfOneAccountMigrateOnce() async throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let v1 = ["CREATE TABLE t (id INTEGER PRIMARY KEY);"]
        _ = try makeStore(dir, "b1", steps: v1).open(alice)
        let store = try makeStore(dir, "b2", steps: v1 + ["ALTER TABLE t ADD COLUMN x;"])
        let actions = try await withThrowingTaskGroup(of: OpenOutcome.Action.self) { group in
            for _ in 0..<6 { group.addTask { try store.open(alice).action } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(actions.filter { $0 == .migrated }.count == 1)
        #expect(actions.filter { $0 == .opened }.count == 5)
    }
}
