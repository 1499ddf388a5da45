import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

@testable import AccountdCore

/// Losses a rebuild used to make without counting them: rows an `ON CONFLICT` clause of the
/// new table resolves away, a column that becomes generated, `STRICT` conversions, a
/// default that names a column, a NULL key that becomes a rowid, rowids hidden by columns,
/// and directives that were not what they seemed.
extension DeclarativeFidelityTests {
    func userVersion(_ path: String) throws -> Int? {
        try read(path) { try Int.fetchOne($0, sql: "PRAGMA user_version") }
    }

    /// A collation change under `UNIQUE ... ON CONFLICT REPLACE` (or `IGNORE`, or a text
    /// primary key) makes 'Bob@x.org' and 'bob@x.org' equal: the plan counts them and refuses.
    @Test(arguments: [
        "email TEXT COLLATE NOCASE UNIQUE ON CONFLICT REPLACE",
        "email TEXT COLLATE NOCASE UNIQUE ON CONFLICT IGNORE",
        "email TEXT COLLATE NOCASE PRIMARY KEY ON CONFLICT REPLACE",
    ])
    func aCollationChangeUnderAConflictClauseIsCountedAndRefused(_ column: String) throws {
        let dir = TestDirectory()
        let old = column.replacingOccurrences(of: " COLLATE NOCASE", with: "")
        let path = try account(dir, "CREATE TABLE t (\(old), name TEXT);", fill: "INSERT INTO t VALUES ('Bob@x.org', 'Bob'), ('bob@x.org', 'Bobby');")
        let target = "CREATE TABLE t (\(column), name TEXT);"
        let plan = try store(dir, target).plan(alice)
        #expect(plan.refusals.contains { $0.contains("2 row(s) share values of the new UNIQUE (email COLLATE NOCASE)") }, "\(plan.refusals)")
        #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(try read(path) { try String.fetchAll($0, sql: "SELECT name FROM t ORDER BY name") } == ["Bob", "Bobby"])
        #expect(try userVersion(path) == 1)
    }

    /// A new `UNIQUE COLLATE NOCASE` counts duplicates as the new column compares them.
    @Test func aNewUniqueIsCountedUnderTheTargetsCollation() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (tag TEXT, n INTEGER);", fill: "INSERT INTO t VALUES ('a', 1), ('A', 2);")
        let target = "CREATE TABLE t (tag TEXT COLLATE NOCASE UNIQUE ON CONFLICT REPLACE, n INTEGER);"
        let plan = try store(dir, target).plan(alice)
        #expect(plan.refusals.contains { $0.contains("share values of the new UNIQUE (tag COLLATE NOCASE)") }, "\(plan.refusals)")
        #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(try read(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 2)
    }

    /// An allowed conversion that makes two keys equal under `ON CONFLICT REPLACE` ('1' and
    /// '01' both become 1) is counted in advance, though the table had that key already.
    @Test func aConversionThatMakesKeysEqualIsCounted() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (code TEXT UNIQUE ON CONFLICT REPLACE, n INTEGER);", fill: "INSERT INTO t VALUES ('1', 1), ('01', 2);")
        let target = "-- accountd: allow-convert t.code\nCREATE TABLE t (code INTEGER UNIQUE ON CONFLICT REPLACE, n INTEGER);"
        let plan = try store(dir, target).plan(alice)
        #expect(plan.refusals == ["table t: 2 row(s) would share values of the UNIQUE (code) once converted to the new type"], "\(plan.refusals)")
        #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(try read(path) { try String.fetchAll($0, sql: "SELECT code FROM t ORDER BY n") } == ["1", "01"])
        #expect(try userVersion(path) == 1)
    }

    /// What no count foresees (a unique generated key under `ON CONFLICT REPLACE`, whose values
    /// exist only once computed): the rebuilt table would hold fewer rows, and the migration fails.
    @Test func aRebuildThatWouldHoldFewerRowsFailsTheMigration() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (email TEXT, n INTEGER);", fill: "INSERT INTO t VALUES ('Bob', 1), ('bob', 2);")
        let target = "CREATE TABLE t (email TEXT, n INTEGER, k AS (lower(email)) UNIQUE ON CONFLICT REPLACE);"
        let error = #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(error?.kind == .migrationFailed)
        #expect(error?.message.contains("would lose rows: table t held 2 row(s) and its rebuilt copy holds 1") == true, "\(error?.message ?? "")")
        #expect(try read(path) { try String.fetchAll($0, sql: "SELECT email FROM t ORDER BY n") } == ["Bob", "bob"])
        #expect(try userVersion(path) == 1)
    }

    /// A plain column that becomes generated loses what it held: counted like a drop.
    @Test func aColumnThatBecomesGeneratedIsCountedAsADrop() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, g);", fill: "INSERT INTO t VALUES (1, 1, 'user data');")
        let target = "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, g AS (a * 3));"
        let plan = try store(dir, target).plan(alice)
        #expect(plan.refusals.contains { $0.contains("column g holds 1 non-NULL value(s)") && $0.contains("generated") }, "\(plan.refusals)")
        #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(try read(path) { try String.fetchOne($0, sql: "SELECT g FROM t") } == "user data")
        _ = try store(dir, "-- accountd: allow-drop t.g\n" + target).open(alice)
        #expect(try read(path) { try Int.fetchOne($0, sql: "SELECT g FROM t") } == 3)
    }

    /// A `STRICT` target converts values too, and refuses some: both are counted, also when
    /// only the strictness changes.
    @Test func conversionsIntoAStrictTableAreCounted() throws {
        let cases: [(v1: String, fill: String, target: String, example: String)] = [
            ("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER) STRICT;", "INSERT INTO t VALUES (1, 7);",
             "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT) STRICT;", "7 becomes '7'"),
            ("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);", "INSERT INTO t VALUES (1, '007');",
             "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER) STRICT;", "'007' becomes 7"),
            ("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER) STRICT;", "INSERT INTO t VALUES (1, 7);",
             "CREATE TABLE t (id INTEGER PRIMARY KEY, a REAL) STRICT;", "7 becomes 7.0"),
            ("CREATE TABLE t (id INTEGER PRIMARY KEY, a ANY) STRICT;", "INSERT INTO t VALUES (1, 1.5);",
             "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT) STRICT;", "1.5 becomes '1.5'"),
            ("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER);", "INSERT INTO t VALUES (1, 'abc');",
             "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER) STRICT;", "'abc' is refused"),
        ]
        for item in cases {
            let dir = TestDirectory()
            let path = try account(dir, item.v1, fill: item.fill)
            let plan = try store(dir, item.target).plan(alice)
            #expect(plan.refusals.contains { $0.contains("column a") && $0.contains(item.example) }, "\(item.target): \(plan.refusals)")
            #expect(throws: AccountdError.self) { try store(dir, item.target).open(alice) }
            #expect(try userVersion(path) == 1)
        }
        // Values a STRICT column keeps as they are: nothing to count.
        let dir = TestDirectory()
        _ = try account(dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER);", fill: "INSERT INTO t VALUES (1, 5), (2, NULL);")
        let plan = try store(dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER) STRICT;").plan(alice)
        #expect(plan.refusals.isEmpty, "\(plan.refusals)")
    }

    /// `DEFAULT "pending"` is the string 'pending', even where the old table has a column `pending`.
    @Test func aDoubleQuotedDefaultIsCopiedAsTheStringSQLiteStores() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE t (id INTEGER PRIMARY KEY, status TEXT, pending TEXT);", fill: "INSERT INTO t VALUES (1, NULL, 'private note');")
        let target = """
            CREATE TABLE t (id INTEGER PRIMARY KEY, status TEXT NOT NULL DEFAULT "pending", pending TEXT,
              kind TEXT NOT NULL DEFAULT [pending] CHECK (kind <> ''));
            """
        _ = try store(dir, target).open(alice)
        let row = try read(path) { try Row.fetchOne($0, sql: "SELECT status, pending, kind FROM t")! }
        #expect(row["status"] as String? == "pending")
        #expect(row["pending"] as String? == "private note")
        #expect(row["kind"] as String? == "pending")
    }

    /// `INT PRIMARY KEY` becoming `INTEGER PRIMARY KEY`: a NULL key would get a new number.
    @Test func aNullKeyThatWouldBecomeARowidIsCounted() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (a INT PRIMARY KEY, b TEXT);", fill: "INSERT INTO t VALUES (NULL, 'no key'), (5, 'five');")
        let target = "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT);"
        let plan = try store(dir, target).plan(alice)
        #expect(plan.refusals.contains { $0.contains("column a becomes the rowid") && $0.contains("1 row(s) hold NULL") }, "\(plan.refusals)")
        #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(try read(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM t WHERE a IS NULL") } == 1)
        _ = try store(dir, "-- accountd: allow-convert t.a\n" + target).open(alice)
        #expect(try read(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 2)
    }

    /// A column named `oid` does not stop the rowids from being kept (an FTS index points at them).
    @Test func rowidsAreKeptWhenAColumnIsNamedOid() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE docs (oid TEXT, body TEXT);", fill: "INSERT INTO docs (_rowid_, oid, body) VALUES (10, 'x', 'alpha'), (20, 'y', 'beta');")
        _ = try store(dir, "CREATE TABLE docs (oid TEXT, body TEXT, extra CHECK (extra IS NULL));").open(alice)
        #expect(try read(path) { try Int.fetchAll($0, sql: "SELECT _rowid_ FROM docs ORDER BY body") } == [10, 20])
    }

    /// Columns named `rowid`, `oid` and `_rowid_` leave no way to carry the rowid: counted.
    @Test func rowidsHiddenByColumnsAreCounted() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (rowid, oid, _rowid_, v);", fill: "INSERT INTO t VALUES (1, 2, 3, 'x');")
        let target = "CREATE TABLE t (rowid, oid, _rowid_, v, extra CHECK (extra IS NULL));"
        let plan = try store(dir, target).plan(alice)
        #expect(plan.refusals.contains { $0.contains("hide the rowid") }, "\(plan.refusals)")
        #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(try userVersion(path) == 1)
        _ = try store(dir, "-- accountd: allow-convert t.rowid\n" + target).open(alice)
        #expect(try userVersion(path) == 2)
    }

    /// `allow-drop a.b` is column b of table a; a table named "a.b" is written quoted.
    @Test func allowDropOfADottedNameIsAColumnUnlessQuoted() throws {
        let dir = TestDirectory()
        let path = try account(
            dir, "CREATE TABLE \"a.b\" (x);\nCREATE TABLE a (b, c);", fill: "INSERT INTO \"a.b\" VALUES ('precious'); INSERT INTO a VALUES (1, 2);")
        let target = "-- accountd: allow-drop a.b\nCREATE TABLE a (c);"
        let plan = try store(dir, target).plan(alice)
        #expect(plan.refusals == ["table a.b: dropping it loses its 1 row(s)"], "\(plan.refusals)")
        #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(try read(path) { try String.fetchOne($0, sql: "SELECT x FROM \"a.b\"") } == "precious")
        _ = try store(dir, "-- accountd: allow-drop \"a.b\"\n" + target).open(alice)
        #expect(try userVersion(path) == 2)
        #expect(SchemaDirectives.qualifiedName("\"a.b\"")! == ("a.b", nil))
        #expect(SchemaDirectives.qualifiedName("[a.b].c")! == ("a.b", "c"))
        #expect(SchemaDirectives.qualifiedName("a.b")! == ("a", "b"))
        #expect(SchemaDirectives.qualifiedName("a.b.c") == nil)
    }

    /// A `-- accountd:` line inside a string literal is text, not a directive.
    @Test func aDirectiveInsideAStringLiteralIsNotObeyed() throws {
        let dir = TestDirectory()
        let path = try account(dir, "CREATE TABLE t (a);\nCREATE TABLE u (a);", fill: "INSERT INTO t VALUES ('precious');")
        let target = "CREATE TABLE u (a DEFAULT 'see:\n-- accountd: allow-drop t\n');"
        let plan = try store(dir, target).plan(alice)
        #expect(plan.refusals.contains { $0.contains("table t: dropping it loses its 1 row(s)") }, "\(plan.refusals)")
        #expect(throws: AccountdError.self) { try store(dir, target).open(alice) }
        #expect(try read(path) { try String.fetchOne($0, sql: "SELECT a FROM t") } == "precious")
    }
}
