import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `Query` and `Execute` refuse what would change the schema, reach another file, load
/// code or touch the daemon's tables, each refusal leaving the file's bytes as they were.
@Suite struct DataGuardTests {
    static let refusedInExecute = [
        "CREATE TABLE t2(x)", "CREATE TEMP TABLE t3(x)", "DROP TABLE user_info", "ALTER TABLE user_info ADD COLUMN y",
        "ALTER TABLE user_info RENAME TO u2", "CREATE INDEX i1 ON user_info(age)", "DROP TABLE app_data",
        "CREATE VIEW v1 AS SELECT 1", "CREATE TRIGGER t1 AFTER INSERT ON user_info BEGIN SELECT 1; END",
        "ATTACH DATABASE '/tmp/accountd-attach.db' AS x", "DETACH DATABASE main", "SELECT load_extension('/tmp/none.so')",
        "SELECT fts3_tokenizer('simple')", "SELECT sql FROM sqlite_stmt", "SELECT fts3_tokenizer('simple', x'4141414141414141')",
        "PRAGMA user_version = 99", "PRAGMA journal_mode = DELETE", "PRAGMA writable_schema = 1", "PRAGMA foreign_keys = OFF",
        "PRAGMA application_id = 7", "PRAGMA synchronous = OFF", "PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA integrity_check",
        "INSERT INTO accountd_prefs(namespace, key, value) VALUES ('user', 'x', '1')", "DELETE FROM accountd_prefs",
        "UPDATE accountd_meta SET value = 'bob' WHERE key = 'account'", "DELETE FROM accountd_migrations", "UPDATE sqlite_master SET sql = ''",
        "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT s1", "RELEASE s1", "ANALYZE", "REINDEX", "VACUUM",
        "VACUUM INTO '/tmp/accountd-vacuum-into.db'", "SELECT 1; DELETE FROM user_info",
    ]

    /// Statements SQLite refuses itself before the guard sees them (`SQLError`): VACUUM inside a
    /// transaction, and a write to sqlite_master, which SQLite never allows through SQL.
    static func refusedBySQLite(_ sql: String) -> Bool {
        sql.hasPrefix("VACUUM") || sql.hasPrefix("UPDATE sqlite_master")
    }

    @Test func everyRefusedExecuteLeavesTheFileAsItWas() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let path = daemon.accountPath("alice")
        let contents = try DataCalls.contents(client)
        let bytes = try DataCalls.bytes(path)
        for sql in Self.refusedInExecute {
            // After a statement that changes a row, so that a refusal must undo it too.
            let reply = try client.callOne(DataCalls.execute("alice", [("UPDATE user_info SET age = age + 1", []), (sql, [])]))
            let error = try #require(reply.error, "\(sql) was allowed")
            #expect(error == .statementNotAllowed || (Self.refusedBySQLite(sql) && error == .sqlError), "\(sql): \(error) \(reply.parameters)")
            if error == .statementNotAllowed { #expect(reply.parameters["statement"] == .string(sql), "\(sql)") }
            #expect(try DataCalls.bytes(path) == bytes, "\(sql) changed the file")
        }
        #expect(try DataCalls.contents(client) == contents)
        #expect(!FileManager.default.fileExists(atPath: "/tmp/accountd-vacuum-into.db"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/accountd-attach.db"))
    }

    /// `fts3_tokenizer` reads and replaces a pointer inside SQLite (a hostile review leaked
    /// libsqlite3's address with a read grant, then crashed the daemon with a forged one). The
    /// two-argument form is live whenever the pointer is a bound parameter, whatever the
    /// connection's settings say, so the guard refuses the function itself.
    @Test func fts3TokenizerIsRefusedEvenWithABoundPointer() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let forged: JSONValue = .object([("base64", .string("QUFBQUFBQUE="))])
        for (sql, values) in [("SELECT fts3_tokenizer(?)", [JSONValue.string("simple")]), ("SELECT fts3_tokenizer(?, ?)", [.string("simple"), forged])] {
            let query = try client.callOne(DataCalls.query("alice", sql, values))
            #expect(query.error == .statementNotAllowed, "\(sql): \(query.encoded())")
            let execute = try client.callOne(DataCalls.execute("alice", [(sql, values)]))
            #expect(execute.error == .statementNotAllowed, "\(sql): \(execute.encoded())")
        }
        #expect(try client.callOne(DataCalls.query("alice", "SELECT count(*) FROM user_info")).error == nil)
    }

    @Test func everyWriteInAQueryIsRefused() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let path = daemon.accountPath("alice")
        let bytes = try DataCalls.bytes(path)
        let writes = [
            "INSERT INTO user_info(user_name) VALUES ('x')", "UPDATE user_info SET age = 1", "DELETE FROM user_info",
            "REPLACE INTO app_data VALUES ('k', 'v')", "WITH x AS (SELECT 1) DELETE FROM user_info",
            "INSERT INTO app_data VALUES ('k', 'v') RETURNING key",
        ]
        for sql in writes + Self.refusedInExecute {
            let reply = try client.callOne(DataCalls.query("alice", sql))
            #expect(reply.error == .statementNotAllowed || (Self.refusedBySQLite(sql) && reply.error == .sqlError), "\(sql): \(reply.error?.rawValue ?? "allowed")")
        }
        #expect(try DataCalls.bytes(path) == bytes)
        #expect(!FileManager.default.fileExists(atPath: "/tmp/accountd-vacuum-into.db"))
    }

    @Test func readingPragmasAndTheDaemonsTablesAreAllowed() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let info = try client.callOne(DataCalls.query("alice", "PRAGMA table_info(user_info)"))
        #expect(info.error == nil && info.parameters["rowCount"] == 4, "\(info.parameters)")
        let version = try client.callOne(DataCalls.query("alice", "PRAGMA user_version"))
        #expect(version.parameters["rows"] == [[3]], "\(version.parameters)")
        let columns = try client.callOne(DataCalls.query("alice", "SELECT group_concat(name) FROM pragma_table_info('user_info')"))
        #expect(columns.parameters["rows"] == [["user_id,user_name,age,sex"]], "\(columns.parameters)")
        let prefs = try client.callOne(DataCalls.query("alice", "SELECT count(*) FROM accountd_prefs"))
        #expect(prefs.parameters["rows"] == [[1]], "\(prefs.parameters)")
    }

    @Test func aFailingThirdStatementLeavesNothingOfTheFirstTwo() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let path = daemon.accountPath("alice")
        let contents = try DataCalls.contents(client)
        let reply = try client.callOne(
            DataCalls.execute(
                "alice",
                [
                    ("INSERT INTO user_info(user_id, user_name) VALUES (10, 'one')", []),
                    ("UPDATE user_info SET user_name = 'changed'", []),
                    ("INSERT INTO user_info(user_id, user_name) VALUES (10, 'twice')", []),
                ]))
        #expect(reply.error == .sqlError, "\(reply.parameters)")
        #expect(reply.parameters["code"] == 1555, "SQLITE_CONSTRAINT_PRIMARYKEY: \(reply.parameters)")
        #expect(reply.parameters["statement"] == "INSERT INTO user_info(user_id, user_name) VALUES (10, 'twice')")
        #expect(try DataCalls.contents(client) == contents)
        // The connection is fine for the next request.
        let next = try client.callOne(DataCalls.execute("alice", [("INSERT INTO user_info(user_id, user_name) VALUES (10, 'one')", [])]))
        #expect(next.parameters["results"] == [["changes": 1, "lastInsertRowid": 10]], "\(next.parameters)")
    }

    /// A `read` grant allows `Query` and not `Execute`; without a grant, neither (grants:
    /// `GrantTests`).
    @Test func aReadGrantMayQueryButNotExecute() throws {
        guard getuid() == 0 else {
            print("skipped: needs root to run a client as uid 65534")
            return
        }
        let dir = TestDirectory()
        // The socket sits in the test folder, which uid 65534 must be able to search.
        #expect(chmod(dir.path, 0o755) == 0)
        try Files.write("access:\n  grants:\n    - { user: \"65534\", accounts: \"alice\", access: read }\n", to: dir.sub("grants.yaml"))
        let daemon = try DataCalls.daemonWithAlice(dir, arguments: ["--config", dir.sub("grants.yaml")], environment: ["ACCOUNTD_SOCKET_MODE": "0666"])
        func asNobody(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            try E2E.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.accountctl, "--socket", daemon.socket] + arguments)
        }
        let read = try asNobody(["--json", "query", "--account", "alice", "SELECT user_name FROM user_info ORDER BY user_id"])
        #expect(read.status == 0, "\(read.stderr) \(daemon.log.suffix(800))")
        #expect(read.stdout.contains("\"ann\""), "\(read.stdout)")
        let write = try asNobody(["exec", "--account", "alice", "DELETE FROM user_info"])
        #expect(write.status == 1 && write.stderr.contains("PermissionDenied"), "\(write.status) \(write.stderr)")
        #expect(try E2E.sql(daemon.accountPath("alice"), "SELECT count(*) FROM user_info") == "2")
        #expect(try client(daemon).callOne("switch bob").error == nil)
        let other = try asNobody(["--json", "query", "--account", "bob", "SELECT 1"])
        #expect(other.status == 1 && other.stderr.contains("PermissionDenied"), "\(other.status) \(other.stderr)")
    }

    private func client(_ daemon: DaemonProcess) throws -> RawClient { try daemon.client() }
}
