import AccountdProtocol
import Foundation
import GRDB
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// Every row of the decision table in SPEC section 5, on real files.
@Suite struct DecisionTableTests {
    static let steps = [
        "CREATE TABLE user_info (user_id INTEGER PRIMARY KEY, user_name TEXT);",
        "ALTER TABLE user_info ADD COLUMN age INTEGER;",
        "ALTER TABLE user_info ADD COLUMN sex TEXT;\nCREATE TABLE app_data (key TEXT PRIMARY KEY NOT NULL, value TEXT);",
    ]

    /// A store over `root` whose bundle holds the first `version` steps.
    func store(_ dir: borrowing TestDirectory, version: Int, steps: [String] = steps, tag: String = "") throws -> AccountStore {
        let bundle = try BundleFixture.write(at: dir.sub("bundle\(version)\(tag)"), steps: Array(steps.prefix(version)))
        return AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle))
    }

    /// A store at `version` that created `account`'s file, and that file's path.
    func created(_ account: AccountName, _ dir: borrowing TestDirectory, version: Int) throws -> (AccountStore, String) {
        let store = try store(dir, version: version)
        _ = try store.open(account)
        return (store, store.root.accountPath(account))
    }

    func version(_ path: String) throws -> Int {
        try DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "PRAGMA user_version")! }
    }

    @Test func missingFileIsCreatedAtTheTarget() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 3)
        let alice = try AccountName("alice")
        let outcome = try store.open(alice)
        #expect(outcome.action == .created)
        #expect(outcome.version == 3)
        let path = store.root.accountPath(alice)
        #expect(try version(path) == 3)
        #expect(Files.mode(path) == 0o600)
        #expect(Files.mode(store.root.accountsDirectory) == 0o700)
        #expect(Files.mode(store.root.path) == 0o700)
        let facts = try DatabaseQueue(path: path).read { db in
            (
                try Int32.fetchOne(db, sql: "PRAGMA application_id"),
                try String.fetchOne(db, sql: "SELECT value FROM accountd_meta WHERE key = 'account'"),
                try Int.fetchOne(db, sql: "SELECT count(*) FROM accountd_migrations"),
                try String.fetchOne(db, sql: "PRAGMA journal_mode"),
                try db.columns(in: "user_info").map(\.name)
            )
        }
        #expect(facts.0 == 0x6163_6374)
        #expect(facts.1 == "alice")
        #expect(facts.2 == 3)
        #expect(facts.3 == "wal")
        #expect(facts.4 == ["user_id", "user_name", "age", "sex"])
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.root.accountsDirectory).filter { $0.hasPrefix(".") } == [])
    }

    @Test func missingFileIsRefusedWithoutCreate() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 3)
        let error = #expect(throws: AccountdError.self) { try store.open(try AccountName("bob"), create: false) }
        #expect(error?.kind == .accountNotFound)
        #expect(!FileManager.default.fileExists(atPath: store.root.accountPath(try AccountName("bob"))))
    }

    @Test func currentFileIsOpenedAndOnOpenRuns() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(
            at: dir.sub("bundle"), steps: Self.steps,
            onOpen: "DELETE FROM app_data WHERE key LIKE 'cache.%';")
        let store = AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle))
        let alice = try AccountName("alice")
        _ = try store.open(alice)
        try DatabaseQueue(path: store.root.accountPath(alice)).write { db in
            try db.execute(sql: "INSERT INTO app_data VALUES ('cache.a', '1'), ('keep', '2')")
        }
        let outcome = try store.open(alice)
        #expect(outcome.action == .opened)
        #expect(outcome.compatible == false)
        let keys = try DatabaseQueue(path: store.root.accountPath(alice)).read {
            try String.fetchAll($0, sql: "SELECT key FROM app_data ORDER BY key")
        }
        #expect(keys == ["keep"])
    }

    @Test func olderFileIsMigratedWithItsRowsAndASnapshot() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let old = try store(dir, version: 1)
        _ = try old.open(alice)
        try DatabaseQueue(path: old.root.accountPath(alice)).write { db in
            try db.execute(sql: "INSERT INTO user_info VALUES (1, 'Ann'), (2, 'Bo')")
        }
        let new = try store(dir, version: 3)
        let steps = Mutex<[MigrationProgress]>([])
        let outcome = try new.open(alice) { progress in steps.withLock { $0.append(progress) } }
        #expect(outcome.action == .migrated)
        #expect(outcome.fromVersion == 1)
        #expect(outcome.version == 3)
        #expect(steps.withLock { $0.map(\.name) } == ["0002_step2", "0003_step3"])
        #expect(steps.withLock { $0.map(\.of) } == [2, 2])
        let path = new.root.accountPath(alice)
        #expect(try version(path) == 3)
        let rows = try DatabaseQueue(path: path).read { try Row.fetchAll($0, sql: "SELECT user_id, user_name, age, sex FROM user_info ORDER BY user_id") }
        #expect(rows.map { $0["user_name"] as String } == ["Ann", "Bo"])
        let history = try DatabaseQueue(path: path).read {
            try Row.fetchAll($0, sql: "SELECT version, method, sha256, daemon_version FROM accountd_migrations ORDER BY version")
        }
        #expect(history.map { $0["method"] as String } == ["created:migrations", "migrated", "migrated"])
        #expect(history.allSatisfy { ($0["sha256"] as String).count == 64 })
        // The snapshot holds the old version, consistent and restorable.
        let snapshot = try #require(outcome.snapshot)
        #expect(snapshot.version == 1)
        #expect(try version(snapshot.path) == 1)
        #expect(new.listSnapshots(alice).map(\.name) == [snapshot.name])
        #expect(Files.mode(snapshot.path) == 0o600)
        // One self-contained file with the old rows: a rollback-journal file, nothing beside it.
        let copy = try DatabaseQueue(path: snapshot.path, configuration: Self.readOnly)
        #expect(try copy.read { try String.fetchAll($0, sql: "SELECT user_name FROM user_info ORDER BY user_id") } == ["Ann", "Bo"])
        #expect(try copy.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "delete")
        try copy.close()
        #expect(!FileManager.default.fileExists(atPath: snapshot.path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"))
    }

    static var readOnly: Configuration {
        var config = Configuration()
        config.readonly = true
        return config
    }

    /// A file whose WAL holds commits another connection has not checkpointed: the snapshot is
    /// taken page by page through that WAL, and the migration keeps the rows only the WAL had.
    @Test func olderFileWithCommitsInItsWALIsSnapshottedWithThem() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let (_, path) = try created(alice, dir, version: 1)
        let other = try DatabaseQueue(path: path)
        try other.write { db in try db.execute(sql: "INSERT INTO user_info VALUES (1, 'only in the WAL')") }
        #expect((try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0) > 0)
        let outcome = try store(dir, version: 3).open(alice)
        try other.close()
        #expect(outcome.action == .migrated)
        let snapshot = try #require(outcome.snapshot)
        let copy = try DatabaseQueue(path: snapshot.path, configuration: Self.readOnly)
        #expect(try copy.read { try String.fetchAll($0, sql: "SELECT user_name FROM user_info") } == ["only in the WAL"])
        #expect(try copy.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 1)
        try copy.close()
        #expect(try version(path) == 3)
        #expect(try DatabaseQueue(path: path).read { try String.fetchAll($0, sql: "SELECT user_name FROM user_info") } == ["only in the WAL"])
    }

    /// An older file that another connection holds open (another process reading it, Litestream)
    /// is migrated beside that connection, without waiting for it to close: the migration's
    /// connection shares the file as WAL mode allows, and the other sees the new version.
    @Test func olderFileOpenElsewhereIsMigratedBesideThatConnection() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let (_, path) = try created(alice, dir, version: 1)
        let other = try DatabaseQueue(path: path)
        #expect(try other.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 1)
        #expect(FileManager.default.fileExists(atPath: path + "-shm"))
        let outcome = try store(dir, version: 3).open(alice)
        #expect(outcome.action == .migrated)
        #expect(try other.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 3)
        try other.close()
        #expect(try version(path) == 3)
    }

    /// An older file refused by the checks keeps every byte, though a file the store may migrate
    /// is inspected on a writable connection: no snapshot, no `-wal` or `-shm` left beside it.
    @Test func olderFileRenamedToAnotherAccountIsRefusedUntouched() throws {
        let dir = TestDirectory()
        let old = try store(dir, version: 1)
        _ = try old.open(try AccountName("alice"))
        let bob = try AccountName("bob")
        let path = old.root.accountPath(bob)
        try FileManager.default.moveItem(atPath: old.root.accountPath(try AccountName("alice")), toPath: path)
        let new = try store(dir, version: 3)
        try expectCorrupt(new, bob, mentioning: "belongs to account \"alice\"")
        #expect(try version(path) == 1)
        #expect(new.listSnapshots(bob).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"))
    }

    @Test func newerCompatibleFileIsOpenedUnchanged() throws {
        let dir = TestDirectory()
        var steps = Self.steps
        steps[2] = "-- accountd: readable-by 2\n" + steps[2]
        let alice = try AccountName("alice")
        let newer = try store(dir, version: 3, steps: steps)
        _ = try newer.open(alice)
        let path = newer.root.accountPath(alice)
        let before = try #require(Files.bytes(path))
        let older = try store(dir, version: 2, steps: steps)
        let outcome = try older.open(alice)
        #expect(outcome.action == .opened)
        #expect(outcome.compatible)
        #expect(outcome.version == 3)
        #expect(Files.bytes(path) == before)
        #expect(older.status(alice).state == .compatibleNewer)
    }

    @Test func newerIncompatibleFileIsRefusedUntouched() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let (_, path) = try created(alice, dir, version: 3)
        let before = try #require(Files.bytes(path))
        let older = try store(dir, version: 2)
        let error = #expect(throws: AccountdError.self) { try older.open(alice) }
        #expect(error?.kind == .accountTooNew)
        #expect(error?.fromVersion == 3)
        #expect(error?.toVersion == 2)
        #expect(error?.message.contains("version 3") == true)
        #expect(Files.bytes(path) == before)
        #expect(older.status(alice).state == .tooNew)
    }

    /// A file that is refused as corrupt keeps every byte.
    func expectCorrupt(_ store: AccountStore, _ account: AccountName, mentioning words: String, statusSees: Bool = true) throws {
        let path = store.root.accountPath(account)
        let before = Files.bytes(path)
        let error = #expect(throws: AccountdError.self) { try store.open(account) }
        #expect(error?.kind == .accountCorrupt)
        #expect(error?.message.contains(words) == true, "message: \(error?.message ?? "")")
        #expect(error?.wireName == .accountCorrupt)
        #expect(Files.bytes(path) == before)
        // Status reads only the file's records (it never scans pages), so page damage shows on open and Verify.
        if statusSees { #expect(store.status(account).state == .corrupt) }
    }

    @Test func fileRenamedToAnotherAccountIsRefused() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 3)
        _ = try store.open(try AccountName("alice"))
        try FileManager.default.moveItem(
            atPath: store.root.accountPath(try AccountName("alice")), toPath: store.root.accountPath(try AccountName("bob")))
        try expectCorrupt(store, try AccountName("bob"), mentioning: "belongs to account \"alice\"")
    }

    @Test func truncatedFileIsRefused() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 3)
        let alice = try AccountName("alice")
        _ = try store.open(alice)
        let path = store.root.accountPath(alice)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS filler(x)")
            for i in 0..<2000 { try db.execute(sql: "INSERT INTO user_info(user_name) VALUES (?)", arguments: [String(repeating: "x", count: 200) + "\(i)"]) }
        }
        try DatabaseQueue(path: path).writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        let size = try #require(Files.bytes(path)).count
        #expect(truncate(path, off_t(size / 2)) == 0)
        try expectCorrupt(store, alice, mentioning: path)
    }

    @Test func fileThatIsNotSQLiteIsRefused() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 3)
        let alice = try AccountName("alice")
        try Files.write(String(repeating: "this is not a database\n", count: 50), to: store.root.accountPath(alice))
        try expectCorrupt(store, alice, mentioning: "not a SQLite database")
    }

    @Test func emptyFileIsRefused() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 3)
        let alice = try AccountName("alice")
        _ = FileManager.default.createFile(atPath: store.root.accountPath(alice), contents: Data())
        try expectCorrupt(store, alice, mentioning: "empty")
    }

    @Test func sqliteFileThatIsNotAnAccountFileIsRefused() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 3)
        let alice = try AccountName("alice")
        try Files.sqlite3(store.root.accountPath(alice), "CREATE TABLE notes(x); INSERT INTO notes VALUES (1);")
        try expectCorrupt(store, alice, mentioning: "not an accountd account file")
    }

    @Test func symlinkIsRefused() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 3)
        let alice = try AccountName("alice")
        _ = try store.open(alice)
        try FileManager.default.createSymbolicLink(
            atPath: store.root.accountPath(try AccountName("eve")), withDestinationPath: store.root.accountPath(alice))
        let error = #expect(throws: AccountdError.self) { try store.open(try AccountName("eve")) }
        #expect(error?.kind == .accountCorrupt)
        #expect(error?.message.contains("symbolic link") == true)
    }

    @Test func corruptPageFailsTheIntegrityCheck() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 3)
        let alice = try AccountName("alice")
        _ = try store.open(alice)
        let path = store.root.accountPath(alice)
        try DatabaseQueue(path: path).write { db in
            for i in 0..<3000 { try db.execute(sql: "INSERT INTO user_info(user_name, age) VALUES (?, ?)", arguments: ["user \(i)", i]) }
        }
        try DatabaseQueue(path: path).writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        // Scribble over the middle of a b-tree page of user_info, leaving the header intact.
        var bytes = try #require(Files.bytes(path))
        let page = 4096
        let middle = (bytes.count / page / 2) * page
        for i in (middle + 16)..<(middle + 600) { bytes[i] = 0xA5 }
        try bytes.write(to: URL(fileURLWithPath: path))
        try expectCorrupt(store, alice, mentioning: "integrity check", statusSees: false)
        #expect(try store.verify(alice).integrity != ["ok"])
    }

    @Test func statusReportsEveryState() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let old = try store(dir, version: 2)
        #expect(old.status(alice).state == .missing)
        #expect(old.status(alice).exists == false)
        _ = try old.open(alice)
        let current = old.status(alice)
        #expect(current.state == .current)
        #expect(current.version == 2)
        #expect(current.lastMigration?.name == "0002_step2")
        #expect(current.sizeBytes > 0)
        #expect(current.createdAt != nil)
        let new = try store(dir, version: 3)
        #expect(new.status(alice).state == .outdated)
        #expect(new.status(alice).target == 3)
    }
}

import Synchronization
