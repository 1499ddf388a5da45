import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

@testable import AccountdCore

/// Bundle files mean what they say: line ends and byte-order marks do not hide a
/// directive, SQLite decides where a statement ends, and no statement may touch what is
/// not the bundle's.
@Suite struct BundleFileTests {
    func load(_ steps: [String]) throws -> SchemaBundle {
        let dir = TestDirectory()
        return try SchemaBundle.load(from: try BundleFixture.write(at: dir.sub("bundle"), steps: steps))
    }

    func refusal(_ steps: [String]) throws -> AccountdError? {
        let dir = TestDirectory()
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: steps)
        return #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
    }

    @Test func directivesAfterTheFirstLineOfACRLFFileAreRead() throws {
        let bundle = try load([
            "CREATE TABLE a (x);",
            "-- adds y\r\n-- accountd: readable-by 1\r\nALTER TABLE a ADD COLUMN y;\r\n",
            "-- accountd: allow-foreign-key-violations\r\nALTER TABLE a ADD COLUMN z;\r\n",
        ])
        #expect(bundle.migrations.map(\.readableBy) == [1, 1, 3])
        #expect(bundle.migrations.map(\.allowsForeignKeyViolations) == [false, false, true])
    }

    @Test func aDirectiveOnTheFirstLineOfACRLFFileOrAfterABOMIsRead() throws {
        let bundle = try load(["CREATE TABLE a (x);", "\u{FEFF}-- accountd: readable-by 1\r\nALTER TABLE a ADD COLUMN y;"])
        #expect(bundle.migrations.map(\.readableBy) == [1, 1])
    }

    @Test func aDeclarativeHeaderWithCRLFOrABOMIsRead() throws {
        for header in ["-- accountd: declarative version 2\r\n", "\u{FEFF}-- accountd: declarative version 2\n"] {
            let dir = TestDirectory()
            try FileManager.default.createDirectory(atPath: dir.sub("b"), withIntermediateDirectories: true)
            try (header + "CREATE TABLE a (x INTEGER PRIMARY KEY,\r\n  y TEXT -- accountd: renamed-from z\r\n);\r\n")
                .write(toFile: dir.sub("b") + "/schema.sql", atomically: true, encoding: .utf8)
            let bundle = try SchemaBundle.load(from: dir.sub("b"))
            #expect(bundle.targetVersion == 2)
        }
    }

    /// `0xFE-- note` is a hex literal and a comment to SQLite; a lexer that read `0xFE-` as a
    /// number took the apostrophe for the start of a string and hid the next statement.
    @Test func aStatementCannotHideBehindAHexLiteralAndAComment() throws {
        let error = try refusal([
            """
            CREATE TABLE a (mask INTEGER);
            UPDATE a SET mask = mask & 0xFE-- don't touch the others
            ;
            PRAGMA application_id = 0;
            -- that's all
            """
        ])
        #expect(error?.message.contains("PRAGMA application_id") == true, "\(String(describing: error))")
        #expect(error?.line == 4)
        let script = SQLScript("SELECT 0xFE-- it's\n;\nSELECT 2;")
        #expect(script.statements.map(\.line) == [1, 3])
        #expect(script.statements.map(\.verb) == ["select", "select"])
    }

    @Test(arguments: [
        "DROP TABLE IF EXISTS accountd_prefs;",
        "DROP TABLE accountd_meta;",
        "INSERT INTO accountd_prefs(namespace, key, value) VALUES ('user', 'k', '1');",
        "INSERT OR REPLACE INTO main.accountd_meta VALUES ('account', 'bob');",
        "REPLACE INTO accountd_meta VALUES ('account', 'bob');",
        "UPDATE OR IGNORE accountd_migrations SET sha256 = '';",
        "DELETE FROM \"accountd_prefs\";",
        "ALTER TABLE accountd_prefs RENAME TO x;",
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN DELETE FROM accountd_prefs; END;",
        "CREATE TRIGGER t AFTER INSERT ON accountd_prefs BEGIN SELECT 1; END;",
        "CREATE INDEX i ON _litestream_seq(seq);",
        "DELETE FROM _litestream_lock;",
        "CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER);",
        "DELETE FROM sqlite_stat4_or_schema_alias; DELETE FROM sqlite_master;",
    ])
    func everyStatementThatChangesAReservedTableIsRefused(statement: String) throws {
        let error = try refusal(["CREATE TABLE a (x);\n" + statement])
        #expect(error?.kind == .invalidBundle)
        #expect(error?.line == 2, "\(String(describing: error))")
    }

    @Test func readingReservedTablesAndResettingACounterAreAllowed() throws {
        let bundle = try load([
            "CREATE TABLE a (id INTEGER PRIMARY KEY AUTOINCREMENT, x);",
            """
            DELETE FROM sqlite_sequence WHERE name = 'a';
            CREATE TABLE b AS SELECT name FROM sqlite_schema WHERE 0;
            CREATE TRIGGER t BEFORE UPDATE OF x ON a BEGIN SELECT 1; END;
            """,
        ])
        #expect(bundle.targetVersion == 2)
    }

    /// Migration 2 turns on `legacy_alter_table`; migration 3 renames a table a view reads.
    /// An account migrated from version 2 runs 3 on a new connection: it must get the
    /// schema the bundle check got when it ran 1 to 3 on one connection.
    @Test func aConnectionSettingOneMigrationChangesDoesNotReachTheNext() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let steps = [
            "CREATE TABLE a (x);\nCREATE VIEW v AS SELECT x FROM a;",
            "PRAGMA legacy_alter_table = ON;",
            "ALTER TABLE a RENAME TO b;",
        ]
        let root = try DataRoot(dir.sub("root"))
        let v2 = try SchemaBundle.load(from: try BundleFixture.write(at: dir.sub("b2"), steps: Array(steps.prefix(2))))
        _ = try AccountStore(root: root, bundle: v2).open(alice)
        let v3 = try SchemaBundle.load(from: try BundleFixture.write(at: dir.sub("b3"), steps: steps))
        _ = try AccountStore(root: root, bundle: v3).open(alice)
        let view = try DatabaseQueue(path: dir.sub("root") + "/accounts/alice.sqlite").read { db in
            try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE name = 'v'")
        }
        #expect(view?.contains("\"b\"") == true || view?.contains(" b") == true, "\(view ?? "")")
    }

    /// A template in WAL mode is an input: loading the bundle and building an account from
    /// it leave nothing beside it in the bundle folder.
    @Test func aWALTemplateIsReadWithoutWritingIntoTheBundle() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: ["CREATE TABLE a (x TEXT);"])
        let template = try DatabaseQueue(path: path + "/template.sqlite")
        try template.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "CREATE TABLE a (x TEXT); INSERT INTO a VALUES ('seed'); PRAGMA user_version = 1")
        }
        try template.close()
        let before = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        #expect(before == ["migrations", "template.sqlite"])
        let store = AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: path))
        _ = try store.open(try AccountName("alice"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).sorted() == before)
        let seed = try DatabaseQueue(path: dir.sub("root") + "/accounts/alice.sqlite").read { try String.fetchOne($0, sql: "SELECT x FROM a") }
        #expect(seed == "seed")

        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path + "/template.sqlite-wal"))
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.message.contains("wal_checkpoint") == true)
    }
}
