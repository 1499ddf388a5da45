import AccountdProtocol
import Foundation
import GRDB
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// Declarative bundles: `schema.sql` is the target, the plan is computed from the file,
/// and losses are refused before anything is written.
@Suite struct DeclarativeTests {
    let alice = try! AccountName("alice")

    /// An account made by a one-step chain, filled by `fill`; returns its path.
    func account(_ dir: borrowing TestDirectory, _ v1: String, fill: String) throws -> String {
        let bundle = try BundleFixture.write(at: dir.sub("chain"), steps: [v1])
        _ = try AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle)).open(alice)
        let path = dir.sub("root") + "/accounts/alice.sqlite"
        try DatabaseQueue(path: path).write { try $0.execute(sql: fill) }
        return path
    }

    func store(_ dir: borrowing TestDirectory, version: Int = 2, _ schema: String) throws -> AccountStore {
        let bundle = try BundleFixture.writeDeclarative(at: dir.sub("decl\(version)-\(UUID().uuidString.prefix(4))"), version: version, schema: schema)
        return AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle))
    }

    func rows(_ path: String, _ sql: String) throws -> [[DatabaseValue]] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in try Row.fetchAll(db, sql: sql).map { Array($0.databaseValues) } }
    }

    @Test func bringsAnAccountToSchemaSQLKeepingItsRows() throws {
        let dir = TestDirectory()
        let path = try account(
            dir,
            """
            CREATE TABLE people (id INTEGER PRIMARY KEY, nick TEXT, age TEXT, junk TEXT);
            CREATE INDEX people_nick ON people(nick);
            CREATE TABLE gone (id INTEGER PRIMARY KEY);
            CREATE VIEW adults AS SELECT id FROM people WHERE age >= 18;
            """,
            fill: "INSERT INTO people VALUES (1, 'ann', '30', NULL), (2, NULL, '12', NULL);")
        let store = try store(
            dir,
            """
            -- accountd: allow-convert person.age
            CREATE TABLE person ( -- accountd: renamed-from people
              id INTEGER PRIMARY KEY,
              nickname TEXT, -- accountd: renamed-from nick
              age INTEGER NOT NULL DEFAULT 0,
              email TEXT
            );
            CREATE INDEX person_nickname ON person(nickname);
            CREATE TABLE note (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES person(id), body TEXT);
            CREATE VIEW adults AS SELECT id, nickname FROM person WHERE age >= 18;
            """)
        let plan = try store.plan(alice)
        #expect(plan.fromVersion == 1 && plan.version == 2)
        #expect(plan.refusals.isEmpty, "\(plan.refusals)")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "planning changes nothing")

        let outcome = try store.open(alice)
        #expect(outcome.action == .migrated)
        #expect(try rows(path, "SELECT id, nickname, age, email FROM person ORDER BY id") == [
            [1.databaseValue, "ann".databaseValue, 30.databaseValue, .null],
            [2.databaseValue, .null, 12.databaseValue, .null],
        ])
        #expect(try rows(path, "SELECT id, nickname FROM adults") == [[1.databaseValue, "ann".databaseValue]])
        let history = try rows(path, "SELECT version, name, sha256, method FROM accountd_migrations WHERE version = 2")
        #expect(history == [[2.databaseValue, "schema.sql".databaseValue, plan.sha256.databaseValue, "declarative".databaseValue]])
        #expect(try store.verify(alice).schema.isEmpty)
        #expect(try store.plan(alice).steps.isEmpty, "at the target, a matching file needs nothing")
    }

    @Test func addsTrailingColumnsWithoutARebuild() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);", fill: "INSERT INTO t VALUES (1, 'x');")
        let store = try store(dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b INTEGER NOT NULL DEFAULT 7 COLLATE NOCASE, c TEXT);")
        let plan = try store.plan(alice)
        #expect(plan.steps.map(\.sql) == [
            "ALTER TABLE \"t\" ADD COLUMN b INTEGER NOT NULL DEFAULT 7 COLLATE NOCASE;", "ALTER TABLE \"t\" ADD COLUMN c TEXT;",
        ])
        _ = try store.open(alice)
        #expect(try rows(path, "SELECT * FROM t") == [[1.databaseValue, "x".databaseValue, 7.databaseValue, .null]])
    }

    struct LossCase: Sendable, CustomTestStringConvertible {
        var name: String
        var v1: String
        var fill: String
        var target: String
        /// Words the refusal must contain: the object and the count.
        var expected: [String]
        var testDescription: String { name }
    }

    static let lossCases: [LossCase] = [
        LossCase(
            name: "dropped table with rows", v1: "CREATE TABLE t (id INTEGER PRIMARY KEY); CREATE TABLE keep (id INTEGER PRIMARY KEY);",
            fill: "INSERT INTO t VALUES (1), (2), (3);", target: "CREATE TABLE keep (id INTEGER PRIMARY KEY);",
            expected: ["table t", "3 row(s)"]),
        LossCase(
            name: "dropped column with values", v1: "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT);",
            fill: "INSERT INTO t VALUES (1, 'x', 'y'), (2, 'x', NULL);", target: "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);",
            expected: ["table t", "column b", "1 non-NULL"]),
        LossCase(
            name: "new NOT NULL over NULLs", v1: "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);",
            fill: "INSERT INTO t VALUES (1, NULL), (2, NULL), (3, 'z');", target: "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT NOT NULL);",
            expected: ["table t", "column a", "2 row(s)"]),
        LossCase(
            name: "new NOT NULL column without default", v1: "CREATE TABLE t (id INTEGER PRIMARY KEY);",
            fill: "INSERT INTO t VALUES (1), (2);", target: "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT NOT NULL);",
            expected: ["table t", "column a", "2 row(s)"]),
        LossCase(
            name: "new UNIQUE over duplicates", v1: "CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT);",
            fill: "INSERT INTO t VALUES (1, 'a'), (2, 'a'), (3, 'b');", target: "CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT UNIQUE);",
            expected: ["table t", "UNIQUE (email)", "2 row(s)"]),
        LossCase(
            name: "new unique index over duplicates", v1: "CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT);",
            fill: "INSERT INTO t VALUES (1, 'a'), (2, 'a'), (3, 'a');",
            target: "CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT); CREATE UNIQUE INDEX t_email ON t(email);",
            expected: ["table t", "UNIQUE (email)", "3 row(s)"]),
        LossCase(
            name: "new CHECK that rows fail", v1: "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER);",
            fill: "INSERT INTO t VALUES (1, -1), (2, 5), (3, NULL);", target: "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER CHECK (n >= 0));",
            expected: ["table t", "1 row(s)", "CHECK"]),
        LossCase(
            name: "new foreign key that rows fail",
            v1: "CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (id INTEGER PRIMARY KEY, p_id INTEGER);",
            fill: "INSERT INTO p VALUES (1); INSERT INTO c VALUES (1, 1), (2, 9), (3, 8), (4, NULL);",
            target: "CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (id INTEGER PRIMARY KEY, p_id INTEGER REFERENCES p(id));",
            expected: ["table c", "2 row(s)", "foreign key"]),
    ]

    @Test(arguments: lossCases)
    func lossIsRefusedNamedAndTheFileUnchanged(_ test: LossCase) throws {
        let dir = TestDirectory()
        let path = try account(dir, test.v1, fill: test.fill)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let store = try store(dir, test.target)
        let plan = try store.plan(alice)
        #expect(plan.steps.contains { $0.lossy }, "the plan marks the lossy step")
        #expect(plan.steps.filter(\.lossy).allSatisfy { $0.sql.hasPrefix("-- lossy: ") })
        let error = #expect(throws: AccountdError.self) { try store.open(alice) }
        #expect(error?.kind == .migrationFailed)
        for word in test.expected {
            #expect(error?.message.contains(word) == true, "\(word) in \(error?.message ?? "")")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the file is byte-for-byte unchanged")
        #expect(!FileManager.default.fileExists(atPath: path + "-wal") || FileSystem.size(of: path + "-wal") == 0)
    }

    @Test func allowDropAcceptsTheNamedLossOnly() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); CREATE TABLE old (id INTEGER PRIMARY KEY);",
            fill: "INSERT INTO t VALUES (1, 'x', 'y'); INSERT INTO old VALUES (1);")
        let onlyTable = try store(dir, "-- accountd: allow-drop old\nCREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);")
        let error = #expect(throws: AccountdError.self) { try onlyTable.open(alice) }
        #expect(error?.message.contains("column b") == true)
        #expect(error?.message.contains("table old") == false, "an allowed drop is not a refusal")
        let both = try store(dir, "-- accountd: allow-drop old\n-- accountd: allow-drop t.b\nCREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);")
        #expect(try both.plan(alice).steps.filter(\.lossy).count == 2)
        _ = try both.open(alice)
        #expect(try rows(path, "SELECT * FROM t") == [[1.databaseValue, "x".databaseValue]])
    }

    /// mihon's history table keeps no column across its rebuild: the plan must not write an empty copy.
    @Test func aRebuildWithNoSharedColumnCopiesNothing() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (old_id INTEGER PRIMARY KEY, x TEXT);", fill: "")
        let store = try store(dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, y TEXT NOT NULL);")
        #expect(try store.plan(alice).steps.allSatisfy { !$0.sql.contains("INSERT") })
        #expect(try store.open(alice).action == .migrated)
        #expect(try rows(path, "SELECT name FROM pragma_table_info('t')") == [["id".databaseValue], ["y".databaseValue]])
    }

    @Test func aChainsPlanIsItsPendingMigrationsText() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (id INTEGER PRIMARY KEY);", fill: "INSERT INTO t VALUES (1);")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let chain = try BundleFixture.write(
            at: dir.sub("chain3"), steps: ["CREATE TABLE t (id INTEGER PRIMARY KEY);", "DROP TABLE t;", "CREATE TABLE u (id INTEGER);"])
        let plan = try AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: chain)).plan(alice)
        #expect(plan.fromVersion == 1 && plan.version == 3)
        #expect(plan.steps.map(\.sql) == ["-- migrations/0002_step2.sql\nDROP TABLE t;", "-- migrations/0003_step3.sql\nCREATE TABLE u (id INTEGER);"])
        #expect(plan.steps.allSatisfy { !$0.lossy }, "a chain's SQL is run as written, not judged")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aNewAccountIsBuiltFromSchemaSQL() throws {
        let dir = TestDirectory()
        let store = try store(dir, version: 5, "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);")
        let outcome = try store.open(alice)
        #expect(outcome.action == .created && outcome.version == 5)
        let path = dir.sub("root") + "/accounts/alice.sqlite"
        #expect(try rows(path, "SELECT version, name, method FROM accountd_migrations") == [
            [5.databaseValue, "schema.sql".databaseValue, "created:schema.sql".databaseValue]
        ])
    }

    @Test func aBundleWithBothKindsOrABadDirectiveIsRefused() throws {
        let dir = TestDirectory()
        let both = try BundleFixture.write(at: dir.sub("both"), steps: ["CREATE TABLE t (id INTEGER);"], schema: "-- accountd: declarative version 1\nCREATE TABLE t (id INTEGER);")
        #expect(throws: AccountdError.self) { try SchemaBundle.load(from: both) }
        let bad = try BundleFixture.writeDeclarative(at: dir.sub("bad"), version: 1, schema: "CREATE TABLE t (\n  id INTEGER -- accountd: renamed-from\n);")
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: bad) }
        #expect(error?.line == 3)
        // A forbidden statement is refused before SQLite runs any of schema.sql.
        let attach = try BundleFixture.writeDeclarative(
            at: dir.sub("attach"), version: 1, schema: "ATTACH '\(dir.sub("attached.sqlite"))' AS other;\nCREATE TABLE other.t (id INTEGER);")
        let refused = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: attach) }
        #expect(refused?.line == 2 && refused?.message.contains("ATTACH") == true, "\(String(describing: refused))")
        #expect(!FileManager.default.fileExists(atPath: dir.sub("attached.sqlite")))
    }
}
