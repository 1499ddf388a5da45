import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

@testable import AccountdCore

/// A replicated account file carries Litestream's `_litestream_seq` and `_litestream_lock`:
/// Verify, the exports and the schema checks leave them out, and a restore keeps them and
/// the file itself. (ReplicationTests runs the real Litestream; here the tables are made
/// with Litestream's own statements, to check each part alone.)
@Suite struct LitestreamTablesTests {
    static let litestreamTables = """
        CREATE TABLE IF NOT EXISTS _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER);
        CREATE TABLE IF NOT EXISTS _litestream_lock (id INTEGER);
        INSERT INTO _litestream_seq (id, seq) VALUES (1, 1);
        """

    /// Collects what an export hands over.
    struct Collected: ExportSink {
        var rows: [String] = []
        var sql = ""
        var bytes: [UInt8] = []
        mutating func row(_ json: UnsafeBufferPointer<UInt8>) throws { rows.append(String(decoding: json, as: UTF8.self)) }
        mutating func sql(_ text: String) throws { sql += text }
        mutating func bytes(_ chunk: UnsafeRawBufferPointer) throws { bytes += chunk }
    }

    static func replicatedStore(_ dir: borrowing TestDirectory) throws -> (AccountStore, AccountName) {
        let bundle = try BundleFixture.write(at: dir.sub("b"), steps: ["CREATE TABLE t (a);", "ALTER TABLE t ADD COLUMN b;"])
        let store = AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle))
        let alice = try AccountName("alice")
        _ = try store.open(alice)
        try Files.sqlite3(store.root.accountPath(alice), "INSERT INTO t VALUES (1, 2);" + Self.litestreamTables)
        return (store, alice)
    }

    @Test func verifyAndTheExportsLeaveLitestreamsTablesOut() throws {
        let dir = TestDirectory()
        let (store, alice) = try Self.replicatedStore(dir)
        let report = try store.verify(alice)
        #expect(report.schema.isEmpty, "\(report.schema)")
        var jsonl = Collected()
        _ = try store.exporter(alice).export(.jsonl, to: &jsonl)
        #expect(jsonl.rows.contains { $0.hasPrefix(#"{"table":"t""#) } && jsonl.rows.allSatisfy { !$0.contains("_litestream") }, "\(jsonl.rows)")
        var sql = Collected()
        _ = try store.exporter(alice).export(.sql, to: &sql)
        #expect(!sql.sql.contains("_litestream") && sql.sql.contains("INSERT INTO"), "\(sql.sql)")
        var copy = Collected()
        _ = try store.exporter(alice).export(.sqlite, to: &copy)
        let copyPath = dir.sub("copy.sqlite")
        FileManager.default.createFile(atPath: copyPath, contents: Data(copy.bytes))
        #expect(try Files.sqlite3(copyPath, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_litestream\\_%' ESCAPE '\\'; SELECT count(*) FROM t;") == "0\n1\n")
    }

    @Test func aMigrationOfAReplicatedFilePassesTheSchemaCheck() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("b"), steps: ["CREATE TABLE t (a);"])
        let root = try DataRoot(dir.sub("root"))
        let alice = try AccountName("alice")
        _ = try AccountStore(root: root, bundle: try SchemaBundle.load(from: bundle)).open(alice)
        try Files.sqlite3(root.accountPath(alice), Self.litestreamTables)
        try Files.write("ALTER TABLE t ADD COLUMN b;", to: bundle + "/migrations/0002_step2.sql")
        let outcome = try AccountStore(root: root, bundle: try SchemaBundle.load(from: bundle)).open(alice)
        #expect(outcome.action == .migrated && outcome.version == 2)
    }

    @Test func aRestoreWritesIntoTheSameFileAndKeepsLitestreamsTables() throws {
        let dir = TestDirectory()
        let (store, alice) = try Self.replicatedStore(dir)
        let path = store.root.accountPath(alice)
        let snapshot = try store.takeSnapshot(alice)
        try Files.sqlite3(path, "INSERT INTO t VALUES (3, 4); DROP TABLE _litestream_lock;")
        // The snapshot has Litestream's tables from the copy; a file that lost one gets it back from the snapshot.
        var before = stat()
        stat(path, &before)
        _ = try store.restore(alice, snapshot: snapshot.name)
        var after = stat()
        stat(path, &after)
        #expect(before.st_ino == after.st_ino, "the restore replaced the file instead of writing into it")
        #expect(try Files.sqlite3(path, "SELECT count(*) FROM t; PRAGMA journal_mode; PRAGMA integrity_check;") == "1\nwal\nok\n")
        #expect(try Files.sqlite3(path, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_litestream\\_%' ESCAPE '\\';") == "2\n")
        #expect(try store.verify(alice).schema.isEmpty)
    }
}
