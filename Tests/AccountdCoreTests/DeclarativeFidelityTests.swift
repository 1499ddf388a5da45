import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

@testable import AccountdCore

/// A declarative plan keeps every value as it was, or refuses: type changes that would
/// convert values, AUTOINCREMENT counters, foreign-key violations the app left, and
/// template seed rows.
@Suite struct DeclarativeFidelityTests {
    let alice = try! AccountName("alice")

    /// alice made by a one-step chain `v1`, filled by `fill`; returns the data root's path.
    func account(_ dir: borrowing TestDirectory, _ v1: String, fill: String) throws -> String {
        let bundle = try BundleFixture.write(at: dir.sub("chain"), steps: [v1])
        _ = try AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle)).open(alice)
        let path = dir.sub("root") + "/accounts/alice.sqlite"
        // As an app would write it: SQLite's foreign-key enforcement is off by default.
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.write { try $0.execute(sql: fill) }
        try queue.close()
        return path
    }

    func store(_ dir: borrowing TestDirectory, _ schema: String) throws -> AccountStore {
        let bundle = try BundleFixture.writeDeclarative(at: dir.sub("decl-\(UUID().uuidString.prefix(6))"), version: 2, schema: schema)
        return AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle))
    }

    func read<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    @Test func aTypeChangeThatWouldConvertValuesIsRefusedUnlessAllowed() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE item (id INTEGER PRIMARY KEY, code TEXT, price TEXT, big TEXT);",
            fill: "INSERT INTO item VALUES (1, '007', ' 42 ', '12345678901234567890'), (2, 'x', 'y', 'z');")
        let target = "CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER, price REAL, big REAL);"
        let plan = try store(dir, target).plan(alice)
        #expect(plan.refusals.count == 3, "\(plan.refusals)")
        #expect(plan.refusals.contains { $0.contains("column code") && $0.contains("'007' becomes 7") })
        let error = #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(error?.kind == .migrationFailed)
        #expect(try read(path) { try String.fetchAll($0, sql: "SELECT code FROM item ORDER BY id") } == ["007", "x"])
        #expect(try read(path) { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 1)

        // Allowed, column by column: the conversion happens.
        let allowed = """
            -- accountd: allow-convert item.code
            -- accountd: allow-convert item.price
            -- accountd: allow-convert item.big
            """ + "\n" + target
        _ = try store(dir, allowed).open(alice)
        #expect(try read(path) { try String.fetchOne($0, sql: "SELECT typeof(code) FROM item WHERE id = 1") } == "integer")
    }

    @Test func aTypeChangeWhoseValuesAllComeThroughIsPlannedWithoutALoss() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE item (id INTEGER PRIMARY KEY, n TEXT);", fill: "INSERT INTO item VALUES (1, 'abc'), (2, NULL), (3, X'00');")
        let plan = try store(dir, "CREATE TABLE item (id INTEGER PRIMARY KEY, n INTEGER);").plan(alice)
        #expect(plan.refusals.isEmpty, "\(plan.refusals)")
        _ = try store(dir, "CREATE TABLE item (id INTEGER PRIMARY KEY, n INTEGER);").open(alice)
        #expect(try read(path) { try String.fetchAll($0, sql: "SELECT typeof(n) FROM item ORDER BY id") } == ["text", "null", "blob"])
    }

    @Test func aRebuildKeepsTheAutoincrementCounter() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT);",
            fill: "INSERT INTO note (body) VALUES ('a'), ('b'), ('c'), ('d'); DELETE FROM note WHERE id > 2;")
        _ = try store(dir, "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL DEFAULT '' CHECK (length(body) < 100));")
            .open(alice)
        #expect(try read(path) { try Int.fetchOne($0, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'note'") } == 4)
        let queue = try DatabaseQueue(path: path)
        let next = try queue.write { db -> Int64 in
            try db.execute(sql: "INSERT INTO note (body) VALUES ('e')")
            return db.lastInsertedRowID
        }
        try queue.close()
        #expect(next == 5)
    }

    @Test func foreignKeyViolationsTheFileAlreadyHadDoNotBlockAPlan() throws {
        let dir = TestDirectory()
        let v1 = "CREATE TABLE parent (id INTEGER PRIMARY KEY);\nCREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id));"
        let path = try account(dir, v1, fill: "INSERT INTO child VALUES (1, 99);")
        _ = try store(dir, v1 + "\nCREATE TABLE extra (id INTEGER PRIMARY KEY);").open(alice)
        #expect(try read(path) { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 2)
        #expect(try read(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM child") } == 1)
    }

    @Test func aNewForeignKeyViolationStillFailsAndTheDeclarativeDirectiveAcceptsIt() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE parent (id INTEGER PRIMARY KEY);\nCREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER);",
            fill: "INSERT INTO child VALUES (1, 99);")
        let target = "CREATE TABLE parent (id INTEGER PRIMARY KEY);\nCREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id));"
        #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(try read(path) { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 1)
        _ = try store(dir, "-- accountd: allow-foreign-key-violations\n" + target).open(alice)
        #expect(try read(path) { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 2)
    }

    @Test func aFailedStepDoesNotSendItsSQLToTheClient() throws {
        let dir = TestDirectory()
        _ = try account(dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);", fill: "INSERT INTO t VALUES (1, 'secret row text'), (2, 'another');")
        // A UNIQUE expression index LossCheck cannot count: SQLite refuses it when the step runs.
        let error = #expect(throws: AccountdError.self) {
            try store(dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);\nCREATE UNIQUE INDEX t_v ON t(substr(v, 1, 0));")
                .open(alice)
        }
        #expect(error?.message.contains("CREATE UNIQUE INDEX") == false, "\(error?.message ?? "")")
        #expect(error?.message.contains("accountctl plan alice") == true, "\(error?.message ?? "")")
    }

    @Test func templateSeedRowsThatBreakAForeignKeyAreRefused() throws {
        let dir = TestDirectory()
        let v1 = "CREATE TABLE parent (id INTEGER PRIMARY KEY);\nCREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id));"
        let path = try BundleFixture.write(at: dir.sub("bundle"), steps: [v1])
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let template = try DatabaseQueue(path: path + "/template.sqlite", configuration: configuration)
        try template.write { db in try db.execute(sql: v1 + "\nINSERT INTO child VALUES (1, 7); PRAGMA user_version = 1;") }
        try template.close()
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.file == "template.sqlite")
        #expect(error?.message.contains("foreign key") == true)
    }

    @Test func aTableNamedWithAStringLiteralIsPlannedLikeAnyOther() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE 't' (id INTEGER PRIMARY KEY, a TEXT);", fill: "INSERT INTO t VALUES (1, 'x');")
        _ = try store(dir, "CREATE TABLE 't' (id INTEGER PRIMARY KEY, a TEXT, b TEXT NOT NULL DEFAULT 'y' CHECK (b <> ''));").open(alice)
        #expect(try read(path) { try String.fetchOne($0, sql: "SELECT a || b FROM t") } == "xy")
    }

    /// A changed generated expression, collation or ON CONFLICT is a change: the plan rebuilds
    /// the table, and the account then computes, compares and resolves as schema.sql says.
    @Test func aChangedGeneratedExpressionOrCollationIsPlannedAndApplied() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE price (id INTEGER PRIMARY KEY, net REAL, gross REAL GENERATED ALWAYS AS (net * 1.19) STORED, name TEXT);",
            fill: "INSERT INTO price (id, net, name) VALUES (1, 100, 'Bob');")
        let target = """
            CREATE TABLE price (id INTEGER PRIMARY KEY, net REAL, gross REAL GENERATED ALWAYS AS (net * 1.07) STORED,
              name TEXT COLLATE NOCASE UNIQUE ON CONFLICT REPLACE);
            """
        let plan = try store(dir, target).plan(alice)
        #expect(!plan.steps.isEmpty)
        _ = try store(dir, target).open(alice)
        #expect(try read(path) { try Double.fetchOne($0, sql: "SELECT gross FROM price") } == 100 * 1.07)
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "INSERT INTO price (id, net, name) VALUES (2, 5, 'bob')") }
        try queue.close()
        #expect(try read(path) { try Int.fetchAll($0, sql: "SELECT id FROM price") } == [2])
    }

    /// A chain whose schema.sql differs from its migrations only by a collation is refused at load.
    @Test func aSchemaSQLThatDiffersOnlyByACollationIsRefused() throws {
        let dir = TestDirectory()
        let path = try BundleFixture.write(
            at: dir.sub("bundle"), steps: ["CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT UNIQUE);"],
            schema: "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE UNIQUE);")
        let error = #expect(throws: AccountdError.self) { try SchemaBundle.load(from: path) }
        #expect(error?.details.contains { $0.contains("collate") } == true, "\(error?.details ?? [])")
    }
}

extension DeclarativeFidelityTests {
    /// An index rename is planned as a drop and a create: an index holds no data.
    @Test func anIndexRenameIsPlannedAsADropAndACreate() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);\nCREATE INDEX t_a ON t(a);", fill: "INSERT INTO t VALUES (1, 'x');")
        let target = "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);\nCREATE INDEX t_by_a ON t(a); -- accountd: renamed-from t_a\n"
        _ = try store(dir, target).open(alice)
        #expect(try read(path) { try String.fetchAll($0, sql: "SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name") } == ["t_by_a"])
        #expect(try read(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 1)
    }
}
