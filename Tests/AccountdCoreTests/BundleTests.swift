import Foundation
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// Loading a schema bundle, and every check that refuses one.
@Suite struct BundleTests {
    func refusal(_ dir: borrowing TestDirectory, steps: [String], names: [String]? = nil, schema: String? = nil, onOpen: String? = nil) throws -> AccountdError? {
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: steps, names: names, schema: schema, onOpen: onOpen)
        return #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
    }

    @Test func sampleBundleLoads() throws {
        let bundle = try SchemaBundle.load(from: Repository.sampleBundle)
        #expect(bundle.targetVersion == 3)
        #expect(bundle.migrations.map(\.name) == ["0001_create_user_info", "0002_add_age", "0003_add_sex_and_app_data"])
        #expect(bundle.targetSchema.tables.keys.sorted() == ["app_data", "user_info"])
        #expect(bundle.fingerprint.count == 64)
    }

    @Test func gapInNumberingIsRefused() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: ["CREATE TABLE a (x);", "CREATE TABLE b (x);"])
        try FileManager.default.moveItem(atPath: path + "/migrations/0002_step2.sql", toPath: path + "/migrations/0003_step2.sql")
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.kind == .invalidBundle)
        #expect(error?.message.contains("version 0002 is missing") == true)
        #expect(error?.file == "migrations/0003_step2.sql")
    }

    @Test func duplicateVersionIsRefused() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: ["CREATE TABLE a (x);"])
        try Files.write("CREATE TABLE b (x);", to: path + "/migrations/0001_other.sql")
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.message.contains("both claim version 1") == true)
    }

    @Test func badFileNameIsRefused() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: ["CREATE TABLE a (x);"])
        try Files.write("CREATE TABLE b (x);", to: path + "/migrations/2_second.sql")
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.message.contains("NNNN_<name>.sql") == true)
    }

    @Test(arguments: [
        ("BEGIN", "CREATE TABLE a (x);\nBEGIN;\nCREATE TABLE b (x);\nCOMMIT;", 2),
        ("COMMIT", "CREATE TABLE a (x);\n\n-- done\nCOMMIT;", 4),
        ("END", "CREATE TABLE a (x);\nEND TRANSACTION;", 2),
        ("ROLLBACK", "ROLLBACK;", 1),
        ("SAVEPOINT", "CREATE TABLE a (x);\nSAVEPOINT s1;", 2),
        ("RELEASE", "CREATE TABLE a (x);\n  release s1;", 2),
        ("VACUUM", "CREATE TABLE a (x);\nVACUUM;", 2),
        ("ATTACH", "ATTACH DATABASE 'other.db' AS other;\nCREATE TABLE a (x);", 1),
    ])
    func forbiddenStatementIsRefusedWithItsLine(verb: String, sql: String, line: Int) throws {
        let dir = TestDirectory()
        let error = try refusal(dir, steps: [sql])
        #expect(error?.kind == .invalidBundle)
        #expect(error?.line == line)
        #expect(error?.file == "migrations/0001_step1.sql")
        #expect(error?.message.contains("\(verb) is not allowed") == true, "\(error?.message ?? "")")
    }

    @Test func beginEndInsideATriggerIsFine() throws {
        let dir = TestDirectory()
        let sql = """
            CREATE TABLE t (id INTEGER PRIMARY KEY, updated INTEGER, note TEXT DEFAULT 'a;b');
            CREATE TRIGGER t_touch AFTER UPDATE ON t FOR EACH ROW
            BEGIN
              UPDATE t SET updated = CASE WHEN new.id > 0 THEN 1 ELSE 0 END WHERE id = new.id;
              SELECT 'semicolon; inside a string';
            END;
            /* a comment; with a semicolon */
            CREATE INDEX t_updated ON t(updated);
            """
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: [sql])
        let bundle = try SchemaBundle.load(from: path)
        #expect(bundle.targetSchema.triggers.keys.sorted() == ["t_touch"])
        #expect(bundle.migrations[0].script.statements.map(\.line) == [1, 2, 8])
    }

    @Test func readableByDirectiveIsParsedAndChecked() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.write(
            at: dir.sub("ok"), steps: ["CREATE TABLE a (x);", "-- accountd: readable-by 1\nALTER TABLE a ADD COLUMN y;", "ALTER TABLE a ADD COLUMN z;"])
        let bundle = try SchemaBundle.load(from: path)
        #expect(bundle.migrations.map(\.readableBy) == [1, 1, 3])
        #expect(bundle.lastCompatibleVersion(upTo: 2) == 1)
        #expect(bundle.lastCompatibleVersion(upTo: 3) == 3)

        let bad = try BundleFixture.write(at: dir.sub("bad"), steps: ["CREATE TABLE a (x);", "-- accountd: readable-by 3\nALTER TABLE a ADD COLUMN y;"])
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: bad) }
        #expect(error?.file == "migrations/0002_step2.sql")
        #expect(error?.line == 1)
        let typo = try BundleFixture.write(at: dir.sub("typo"), steps: ["-- accountd: readable_by 1\nCREATE TABLE a (x);"])
        let typoError = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: typo) }
        #expect(typoError?.message.contains("unknown directive") == true)
    }

    @Test func failingStatementIsReportedWithFileAndLine() throws {
        let dir = TestDirectory()
        let error = try refusal(dir, steps: ["CREATE TABLE a (x);", "\n\nALTER TABLE missing ADD COLUMN y;"])
        #expect(error?.file == "migrations/0002_step2.sql")
        #expect(error?.line == 3)
        #expect(error?.message.contains("no such table: missing") == true)
    }

    @Test func reservedTableNamesAreRefused() throws {
        let dir = TestDirectory()
        let error = try refusal(dir, steps: ["CREATE TABLE accountd_meta (x);"])
        #expect(error?.message.contains("reserved") == true)
        let renamed = try refusal(TestDirectory(), steps: ["CREATE TABLE a (x);\nALTER TABLE a RENAME TO accountd_sneaky;"])
        #expect(renamed?.message.contains("accountd_sneaky") == true)
    }

    @Test func reservedPragmasAreRefused() throws {
        let dir = TestDirectory()
        let error = try refusal(dir, steps: ["CREATE TABLE a (x);\nPRAGMA user_version = 7;"])
        #expect(error?.message.contains("PRAGMA user_version") == true)
        #expect(error?.line == 2)
    }

    @Test func schemaSQLThatDriftsIsRefusedNamingTheDifferences() throws {
        let dir = TestDirectory()
        let steps = ["CREATE TABLE user_info (user_id INTEGER PRIMARY KEY, user_name TEXT);", "ALTER TABLE user_info ADD COLUMN age INTEGER;"]
        let schema = """
            CREATE TABLE user_info (
              user_id INTEGER PRIMARY KEY,
              user_name TEXT NOT NULL,
              years INTEGER
            );
            CREATE TABLE stray (x);
            """
        let error = try refusal(dir, steps: steps, schema: schema)
        #expect(error?.file == "schema.sql")
        let details = error?.details ?? []
        #expect(details.contains { $0.contains("column age only in migrations") }, "\(details)")
        #expect(details.contains { $0.contains("column years only in schema.sql") })
        #expect(details.contains { $0.contains("column user_name") && $0.contains("NOT NULL in schema.sql") })
        #expect(details.contains { $0.contains("table stray: only in schema.sql, schema.sql line 6") })
    }

    @Test func equivalentSchemaSQLIsAccepted() throws {
        let dir = TestDirectory()
        // Same schema, written differently: quoting, case, layout, comments, IF NOT EXISTS.
        let steps = [
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT '', CHECK (length(name) < 100));",
            "ALTER TABLE t ADD COLUMN flag INTEGER DEFAULT 0;\nCREATE INDEX t_name ON t(name);",
        ]
        let schema = """
            -- everything at once
            create table if not exists "t" (
              "id"   integer primary key,
              name   TEXT not null default '',
              flag   INTEGER default (0),
              check (LENGTH(name) < 100)
            );
            CREATE INDEX IF NOT EXISTS [t_name] ON `t` (name);
            """
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: steps, schema: schema)
        #expect(try SchemaBundle.load(from: path).creationMethod == .schemaSQL)
    }

    @Test func templateThatDriftsIsRefused() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: ["CREATE TABLE t (a TEXT);"])
        try Files.sqlite3(path + "/template.sqlite", "CREATE TABLE t (a INTEGER);")
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.file == "template.sqlite")
        #expect(error?.details.contains { $0.contains("column a: type TEXT vs INTEGER") } == true, "\(error?.details ?? [])")
    }

    @Test func brokenOnOpenScriptIsRefused() throws {
        let dir = TestDirectory()
        let error = try refusal(dir, steps: ["CREATE TABLE t (a);"], onOpen: "DELETE FROM t;\nDELETE FROM cache;")
        #expect(error?.file == "on-open.sql")
        #expect(error?.line == 2)
    }

    @Test(.enabled(if: Repository.corpusIsPresent, Comment(rawValue: Repository.corpusSkipReason)))
    func mihonChainWithItsAppFreshSchemaIsRefused() throws {
        let dir = TestDirectory()
        let source = Repository.corpus + "/mihon"
        let path = try BundleFixture.truncate(source, at: 42, into: dir.sub("mihon"))
        try FileManager.default.copyItem(atPath: source + "/app-fresh-schema.sql", toPath: path + "/schema.sql")
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.kind == .invalidBundle)
        #expect(error?.file == "schema.sql")
        let details = error?.details ?? []
        #expect(details.contains { $0.hasPrefix("table history_temp: only in migrations") }, "\(details.joined(separator: "\n"))")
        #expect(details.contains { $0.contains("table history") && $0.contains("column last_read") })
        #expect(details.contains { $0.contains("mangas_categories") && $0.contains("column last_modified_at only in migrations") })
        #expect(details.contains { $0.hasPrefix("trigger update_last_modified_at_mangas_categories: only in migrations") })
        // Without the drifting schema.sql, the chain itself loads.
        try FileManager.default.removeItem(atPath: path + "/schema.sql")
        #expect(try SchemaBundle.load(from: path).targetVersion == 42)
    }

    @Test(.enabled(if: Repository.corpusIsPresent, Comment(rawValue: Repository.corpusSkipReason)))
    func memosChainWithItsAppFreshSchemaIsRefused() throws {
        let dir = TestDirectory()
        let source = Repository.corpus + "/memos"
        let path = try BundleFixture.truncate(source, at: 62, into: dir.sub("memos"))
        try FileManager.default.copyItem(atPath: source + "/app-fresh-schema.sql", toPath: path + "/schema.sql")
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        let details = error?.details ?? []
        #expect(details.contains { $0.hasPrefix("table migration_history: only in migrations") }, "\(details)")
        #expect(details.contains { $0.hasPrefix("table storage: only in migrations") })
    }
}

/// Splitting scripts into top-level statements.
@Suite struct SQLScriptTests {
    @Test(arguments: [
        ("CREATE TABLE a (x); CREATE TABLE b (y);", 2),
        ("INSERT INTO a VALUES ('x;y'); -- c;\n/* d; */ SELECT 1", 2),
        ("CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; SELECT 2; END; SELECT 3;", 2),
        (";;  ;", 0),
        ("-- only a comment", 0),
        ("SELECT \"a;b\", [c;d], `e;f`;", 1),
        ("SELECT 1", 1),
    ])
    func splits(sql: String, count: Int) {
        #expect(SQLScript(sql).statements.count == count)
    }

    @Test func normalisationIgnoresLayoutQuotingAndCase() {
        #expect(
            SQLLexer.normalize("CREATE INDEX \"X\" ON [t] (a, `b`) -- c", identifiers: ["x"])
                == SQLLexer.normalize("create index x on t(a,b)", identifiers: ["x"]))
        #expect(SQLLexer.normalize("SELECT 'A'") != SQLLexer.normalize("SELECT 'a'"))
        // A double-quoted token that names nothing in the schema is SQLite's string literal: its case counts.
        #expect(SQLLexer.normalize("SELECT \"A\"", identifiers: ["x"]) != SQLLexer.normalize("SELECT \"a\"", identifiers: ["x"]))
    }
}
