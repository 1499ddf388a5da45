import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

@testable import AccountdCore

/// A bundle is refused when its files would give accounts different schemas or data, or
/// when it reaches what is not its own, however the SQL is spelled.
@Suite struct BundleGuardTests {
    /// Loads a chain bundle of `steps` with `schema` as its schema.sql; nil when it loads.
    func refusal(_ steps: [String], schema: String? = nil, onOpen: String? = nil) throws -> AccountdError? {
        let dir = TestDirectory()
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: steps, schema: schema, onOpen: onOpen)
        do {
            _ = try SchemaBundle.load(from: path)
            return nil
        } catch let error as AccountdError {
            return error
        }
    }

    // MARK: Double-quoted string literals

    /// `"Pending"` is the string 'Pending' to SQLite when no column has that name: a
    /// schema.sql that writes `"pending"` gives new accounts another default and another
    /// trigger than the chain gives old ones.
    @Test(arguments: [
        ("CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT DEFAULT \"Pending\");",
         "CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT DEFAULT \"pending\");"),
        ("CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT DEFAULT Pending);",
         "CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT DEFAULT pending);"),
        ("CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT);\nCREATE TABLE log (x);\nCREATE TRIGGER t_ins AFTER INSERT ON task BEGIN INSERT INTO log VALUES (\"Created\"); END;",
         "CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT);\nCREATE TABLE log (x);\nCREATE TRIGGER t_ins AFTER INSERT ON task BEGIN INSERT INTO log VALUES (\"created\"); END;"),
        ("CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT CHECK (state <> \"Bad\"));",
         "CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT CHECK (state <> \"bad\"));"),
        ("CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT);\nCREATE VIEW v AS SELECT \"Zed\" AS z FROM task;",
         "CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT);\nCREATE VIEW v AS SELECT \"zed\" AS z FROM task;"),
        ("CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT);\nCREATE INDEX open_tasks ON task (id) WHERE state = \"Open\";",
         "CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT);\nCREATE INDEX open_tasks ON task (id) WHERE state = \"open\";"),
        ("CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT, label TEXT AS (state || \"X\"));",
         "CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT, label TEXT AS (state || \"x\"));"),
        ("CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT);\nCREATE TRIGGER no_bad BEFORE INSERT ON task BEGIN SELECT RAISE(ABORT, \"Bad\"); END;",
         "CREATE TABLE task (id INTEGER PRIMARY KEY, state TEXT);\nCREATE TRIGGER no_bad BEFORE INSERT ON task BEGIN SELECT RAISE(ABORT, \"bad\"); END;"),
    ])
    func aDoubleQuotedStringKeepsItsCase(chain: String, schema: String) throws {
        let error = try refusal([chain], schema: schema)
        #expect(error?.message.contains("does not build the same schema") == true, "\(error?.message ?? "loaded")")
        #expect(try refusal([chain], schema: chain) == nil)
    }

    /// An account holds the daemon's tables, whose columns (`name`, `key`) the bundle's target
    /// lacks: `"Name"` in a trigger is the same string literal in both, and the account migrates.
    @Test func aStringNamedLikeADaemonColumnIsAStringInTheAccountToo() throws {
        let dir = TestDirectory()
        let root = try DataRoot(dir.sub("root"))
        let alice = try AccountName("alice")
        let steps = [
            "CREATE TABLE person (id INTEGER PRIMARY KEY, label TEXT);\nCREATE TABLE log (x);\nCREATE TRIGGER person_added AFTER INSERT ON person BEGIN INSERT INTO log VALUES (\"Name\"); END;",
            "ALTER TABLE person ADD COLUMN age INTEGER;",
        ]
        let v1 = try SchemaBundle.load(from: try BundleFixture.write(at: dir.sub("b1"), steps: Array(steps.prefix(1))))
        _ = try AccountStore(root: root, bundle: v1).open(alice)
        let v2 = try SchemaBundle.load(from: try BundleFixture.write(at: dir.sub("b2"), steps: steps))
        _ = try AccountStore(root: root, bundle: v2).open(alice)
        let version = try DatabaseQueue(path: dir.sub("root") + "/accounts/alice.sqlite").read { try Int.fetchOne($0, sql: "PRAGMA user_version") }
        #expect(version == 2)
    }

    /// Identifiers still compare without case or quotes, whether a name is quoted or not.
    @Test func quotedAndBareIdentifiersStillCompareEqual() throws {
        let chain = """
            CREATE TABLE Task (ID INTEGER PRIMARY KEY, State TEXT CHECK ("State" <> 'x'));
            CREATE VIEW open_tasks AS SELECT "ID" AS "Key", State FROM "Task" WHERE "State" = 'open';
            CREATE TRIGGER t AFTER UPDATE ON Task BEGIN UPDATE "Task" SET "State" = lower(new."State") WHERE id = new.id; END;
            """
        let schema = """
            CREATE TABLE "task" (id INTEGER PRIMARY KEY, state TEXT CHECK (state <> 'x'));
            CREATE VIEW open_tasks AS SELECT id AS key, state FROM task WHERE state = 'open';
            CREATE TRIGGER t AFTER UPDATE ON task BEGIN UPDATE task SET state = lower(new.state) WHERE id = new.id; END;
            """
        #expect(try refusal([chain], schema: schema) == nil)
    }

    // MARK: Tables and keys

    /// `INTEGER PRIMARY KEY DESC` is not the rowid: a NULL key stays NULL.
    @Test func anIntegerPrimaryKeyDescIsNotTheRowid() throws {
        let error = try refusal(["CREATE TABLE t (a INTEGER PRIMARY KEY DESC, b);"], schema: "CREATE TABLE t (a INTEGER PRIMARY KEY, b);")
        #expect(error?.details.contains { $0.contains("is not the rowid") } == true, "\(error?.details ?? [])")
    }

    /// `DESC` in a WITHOUT ROWID key orders the table; in a UNIQUE it orders the index.
    @Test func descInAKeyIsCompared() throws {
        let withoutRowid = try refusal(
            ["CREATE TABLE w (a TEXT, b, PRIMARY KEY (a DESC)) WITHOUT ROWID;"],
            schema: "CREATE TABLE w (a TEXT, b, PRIMARY KEY (a)) WITHOUT ROWID;")
        #expect(withoutRowid?.details.contains { $0.contains("a desc") } == true, "\(withoutRowid?.details ?? [])")
        let unique = try refusal(["CREATE TABLE u (a TEXT, UNIQUE (a DESC));"], schema: "CREATE TABLE u (a TEXT, UNIQUE (a));")
        #expect(unique?.details.contains { $0.contains("a desc") } == true, "\(unique?.details ?? [])")
    }

    /// A deferred foreign key lets a transaction break it for a while; an immediate one does not.
    @Test func aDeferredForeignKeyIsCompared() throws {
        let parent = "CREATE TABLE p (id INTEGER PRIMARY KEY);\n"
        for (chain, schema) in [
            ("CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);",
             "CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id));"),
            ("CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER, FOREIGN KEY (pid) REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);",
             "CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER, FOREIGN KEY (pid) REFERENCES p (id) DEFERRABLE INITIALLY IMMEDIATE);"),
        ] {
            let error = try refusal([parent + chain], schema: parent + schema)
            #expect(error?.details.contains { $0.contains("deferrable initially deferred") } == true, "\(error?.details ?? [])")
        }
        let same = "CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER, FOREIGN KEY (pid) REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);"
        #expect(try refusal([parent + same], schema: parent + "CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);") == nil)
    }

    // MARK: Reserved tables

    /// `ALTER TABLE t RENAME TO accountd_prefs` makes the daemon's table as surely as CREATE,
    /// with whatever trigger hangs on `t`: refused in a migration, schema.sql and on-open.sql.
    @Test func renamingIntoAReservedNameIsRefused() throws {
        let rename = """
            CREATE TABLE stash (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (namespace, key)) WITHOUT ROWID;
            CREATE TABLE seen (v);
            CREATE TRIGGER spy AFTER INSERT ON stash BEGIN INSERT INTO seen VALUES (new.key); END;
            ALTER TABLE stash RENAME TO accountd_prefs;
            """
        let inMigration = try refusal(["CREATE TABLE notes (x);", rename])
        #expect(inMigration?.message.contains("accountd_prefs") == true, "\(inMigration?.message ?? "loaded")")
        let inOnOpen = try refusal(["CREATE TABLE notes (x);"], onOpen: rename.replacingOccurrences(of: "CREATE TABLE", with: "CREATE TABLE IF NOT EXISTS"))
        #expect(inOnOpen?.file == "on-open.sql", "\(inOnOpen?.message ?? "loaded")")
        let litestream = try refusal(["CREATE TABLE t2 (id INTEGER PRIMARY KEY, seq INTEGER);\nALTER TABLE t2 RENAME TO \"_litestream_seq\";"])
        #expect(litestream?.message.contains("_litestream_seq") == true, "\(litestream?.message ?? "loaded")")

        let dir = TestDirectory()
        let declarative = try BundleFixture.writeDeclarative(at: dir.sub("d"), version: 1, schema: "CREATE TABLE notes (x);\n" + rename)
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: declarative) }
        #expect(error?.message.contains("accountd_prefs") == true, "\(error?.message ?? "")")
    }

    /// Whatever statement made it, a trigger or index left on a reserved table is found.
    @Test func aTriggerOnAReservedTableIsFoundAfterTheScriptRuns() throws {
        let queue = try DatabaseQueue()
        let found = try queue.write { db in
            try db.execute(sql: "CREATE TABLE accountd_prefs (k); CREATE TABLE seen (v)")
            try db.execute(sql: "CREATE TRIGGER spy AFTER INSERT ON accountd_prefs BEGIN INSERT INTO seen VALUES (new.k); END")
            try db.execute(sql: "ALTER TABLE accountd_prefs RENAME TO plain")
            try db.execute(sql: "CREATE TABLE accountd_other (x); CREATE INDEX by_x ON accountd_other (x); ALTER TABLE plain RENAME TO accountd_prefs")
            return try SchemaReader.reservedReferences(db)
        }
        #expect(found.contains("trigger spy on accountd_prefs"), "\(found)")
        #expect(found.contains("index by_x on accountd_other"), "\(found)")
    }

    // MARK: Templates

    /// A template opened immutable never rolls back a hot journal: the bundle is refused.
    @Test func aTemplateWithAHotJournalIsRefused() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: ["CREATE TABLE a (x TEXT);"])
        let template = try DatabaseQueue(path: path + "/template.sqlite")
        try template.writeWithoutTransaction { db in try db.execute(sql: "CREATE TABLE a (x TEXT); INSERT INTO a VALUES ('seed')") }
        try template.close()
        _ = try SchemaBundle.load(from: path)
        try Data(repeating: 7, count: 512).write(to: URL(fileURLWithPath: path + "/template.sqlite-journal"))
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.message.contains("template.sqlite-journal") == true, "\(error?.message ?? "")")
    }

    /// A template whose index disagrees with its table is damaged, and refused.
    @Test func aDamagedTemplateIsRefused() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.write(
            at: dir.sub("bundle"), steps: ["CREATE TABLE a (x TEXT, y TEXT);\nCREATE INDEX a_by ON a (y);"])
        let template = try DatabaseQueue(path: path + "/template.sqlite")
        try template.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE TABLE a (x TEXT, y TEXT); CREATE INDEX a_by ON a (x); INSERT INTO a VALUES ('1', '2'), ('3', '4')")
            try db.execute(sql: "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = 'CREATE INDEX a_by ON a (y)' WHERE name = 'a_by'; PRAGMA writable_schema = OFF")
        }
        try template.close()
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.message.contains("integrity_check") == true, "\(error?.message ?? "")")
    }

    // MARK: TEMP objects

    /// Migration 2 makes a TEMP view that hides table `t`; migration 3 reads `t`. An account
    /// migrated from version 2 runs 3 on a new connection and reads the real `t`; one migrated
    /// from version 1 must read it too.
    @Test func aTempObjectOneMigrationMakesDoesNotReachTheNext() throws {
        let dir = TestDirectory()
        let steps = [
            "CREATE TABLE t (a);\nCREATE TABLE u (a);",
            "CREATE TEMP VIEW t AS SELECT 99 AS a;\nCREATE TEMP TABLE scratch (a);\nCREATE TEMP TRIGGER tr AFTER INSERT ON u BEGIN INSERT INTO scratch VALUES (1); END;",
            "INSERT INTO u SELECT a FROM t;",
        ]
        let root = try DataRoot(dir.sub("root"))
        let v1 = try SchemaBundle.load(from: try BundleFixture.write(at: dir.sub("b1"), steps: Array(steps.prefix(1))))
        let alice = try AccountName("alice")
        _ = try AccountStore(root: root, bundle: v1).open(alice)
        let file = dir.sub("root") + "/accounts/alice.sqlite"
        try DatabaseQueue(path: file).write { try $0.execute(sql: "INSERT INTO t VALUES (1)") }
        let v3 = try SchemaBundle.load(from: try BundleFixture.write(at: dir.sub("b3"), steps: steps))
        _ = try AccountStore(root: root, bundle: v3).open(alice)
        let rows = try DatabaseQueue(path: file).read { try Int.fetchAll($0, sql: "SELECT a FROM u") }
        #expect(rows == [1])

        let queue = try DatabaseQueue()
        try queue.writeWithoutTransaction { db in
            try ScriptRunner.run(SQLScript(steps[0]), file: "one", in: db)
            try ScriptRunner.run(SQLScript(steps[1]), file: "two", in: db)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_temp_master") == 0)
        }
    }

    // MARK: Small things

    /// A directive below the first statement was silently ignored; it is refused with its line.
    @Test func aDirectiveBelowTheFirstStatementIsRefused() throws {
        let error = try refusal(["CREATE TABLE a (x);", "ALTER TABLE a ADD COLUMN y;\n-- accountd: readable-by 1\n"])
        #expect(error?.line == 2, "\(error?.message ?? "loaded")")
        #expect(error?.message.contains("top of the file") == true, "\(error?.message ?? "loaded")")
        #expect(try refusal(["CREATE TABLE a (x);", "-- ACCOUNTD: readable-by 1\nALTER TABLE a ADD COLUMN y;"]) == nil)
    }

    /// A declarative schema.sql reads `-- accountd:` in lowercase only: another spelling is refused, not ignored.
    @Test func aMiscasedDeclarativeDirectiveIsRefused() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.writeDeclarative(
            at: dir.sub("d"), version: 1, schema: "CREATE TABLE a (\n  x TEXT -- ACCOUNTD: renamed-from y\n);\n")
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.line == 3, "\(error?.message ?? "")")
    }

    /// A migration that reads the daemon's records is refused with the reason, not only "no such table".
    @Test func aMigrationReadingTheDaemonsRecordsIsRefusedWithTheReason() throws {
        let error = try refusal(["CREATE TABLE info (v);\nINSERT INTO info SELECT value FROM accountd_meta WHERE key = 'account';"])
        #expect(error?.message.contains("accountd_* tables do not exist while a new account is built") == true, "\(error?.message ?? "loaded")")
    }

    /// Planning reads the account and leaves nothing beside it (no -wal, no -shm).
    @Test func planningLeavesNothingBesideTheAccount() throws {
        let dir = TestDirectory()
        let root = try DataRoot(dir.sub("root"))
        let alice = try AccountName("alice")
        let steps = ["CREATE TABLE a (x);", "ALTER TABLE a ADD COLUMN y;"]
        do {
            let v1 = try SchemaBundle.load(from: try BundleFixture.write(at: dir.sub("b1"), steps: Array(steps.prefix(1))))
            _ = try AccountStore(root: root, bundle: v1).open(alice)
        }
        let accounts = dir.sub("root") + "/accounts"
        let before = try FileManager.default.contentsOfDirectory(atPath: accounts).sorted()
        #expect(before == ["alice.sqlite"])
        let v2 = try SchemaBundle.load(from: try BundleFixture.write(at: dir.sub("b2"), steps: steps))
        let plan = try AccountStore(root: root, bundle: v2).plan(alice)
        #expect(plan.steps.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: accounts).sorted() == before)

        let declarative = try SchemaBundle.load(
            from: try BundleFixture.writeDeclarative(at: dir.sub("d"), version: 2, schema: "CREATE TABLE a (x, y, z);"))
        _ = try? AccountStore(root: root, bundle: declarative).plan(alice)
        #expect(try FileManager.default.contentsOfDirectory(atPath: accounts).sorted() == before)
    }
}
