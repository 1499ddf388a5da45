import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `accountctl query` and `accountctl exec`: parameters read as JSON or text, a table or
/// `--json`, and the exit statuses of refusals.
@Suite struct AccountctlDataTests {
    @Test func execAndQueryAsAPersonTypesThem() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let socket = daemon.socket
        #expect(try E2E.accountctl(["switch", "alice"], socket: socket).status == 0)

        // Ann is text (not JSON), 30 a number, "31" (JSON) the text 31, null a NULL.
        let insert = "INSERT INTO user_info(user_name, age, sex) VALUES (?, ?, ?)"
        let first = try E2E.accountctl(["exec", insert, "Ann", "30", "null"], socket: socket)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("changes:         1") && first.stdout.contains("lastInsertRowid: 1"), "\(first.stdout)")
        let second = try E2E.accountctl(["--json", "exec", "--account", "alice", insert, #""Bob""#, #""31""#, #"{"base64":"AAE="}"#], socket: socket)
        #expect(try JSONParser.parse(second.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == ["results": [["changes": 1, "lastInsertRowid": 2]]])
        // (age has INTEGER affinity: SQLite stores the text "31" as the integer 31.)
        #expect(try E2E.sql(daemon.accountPath("alice"), "SELECT typeof(age), typeof(sex) FROM user_info ORDER BY user_id;") == "integer|null\ninteger|blob")
        let types = try E2E.accountctl(["--json", "query", "SELECT typeof(?), typeof(?), typeof(?)", #""31""#, "31", "x y"], socket: socket)
        #expect(try E2E.jsonLines(types.stdout).dropFirst().first == ["rows": [["text", "integer", "text"]]], "\(types.stdout)")

        let table = try E2E.accountctl(["query", "SELECT user_id, user_name, sex FROM user_info WHERE user_id >= ? ORDER BY user_id", "1"], socket: socket)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout == "user_id  user_name  sex\n1        Ann        NULL\n2        Bob        x'0001'\n", "\(table.stdout)")
        #expect(table.stderr.contains("(2 rows)"))
        let json = try E2E.accountctl(["--json", "query", "SELECT user_name FROM user_info ORDER BY user_id"], socket: socket)
        #expect(try E2E.jsonLines(json.stdout) == [["columns": ["user_name"]], ["rows": [["Ann"]]], ["rows": [["Bob"]]], ["rowCount": 2, "truncated": false]])

        // A refusal exits 1 and names the error; a bad parameter is a usage error.
        let refused = try E2E.accountctl(["exec", "DROP TABLE user_info"], socket: socket)
        #expect(refused.status == 1 && refused.stderr.contains("StatementNotAllowed"), "\(refused.stderr)")
        let write = try E2E.accountctl(["query", "DELETE FROM user_info"], socket: socket)
        #expect(write.status == 1 && write.stderr.contains("StatementNotAllowed"), "\(write.stderr)")
        let usage = try E2E.accountctl(["query", "SELECT ?", "[1,2]"], socket: socket)
        #expect(usage.status == 2, "\(usage.stderr)")
        #expect(try E2E.sql(daemon.accountPath("alice"), "SELECT count(*) FROM user_info;") == "2")
    }

    /// Text another person stored went to the admin's terminal raw: an escape sequence, a
    /// carriage return, a newline that passed for another row. The table and `keys` now
    /// escape control characters; `--json` keeps them exact.
    @Test func storedControlCharactersNeverReachTheTerminalRaw() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let socket = daemon.socket
        #expect(try E2E.accountctl(["switch", "alice"], socket: socket).status == 0)
        let evil = "evil\u{1B}]0;pwned\u{07}\u{1B}[2J\rline2\nline3"
        #expect(try E2E.accountctl(["exec", "INSERT INTO app_data VALUES ('k', ?)", evil], socket: socket).status == 0)
        let table = try E2E.accountctl(["query", "SELECT value FROM app_data"], socket: socket)
        #expect(table.stdout == "value\nevil\\u{1B}]0;pwned\\u{7}\\u{1B}[2J\\u{D}line2\\u{A}line3\n", "\(table.stdout.debugDescription)")
        let json = try E2E.accountctl(["--json", "query", "SELECT value FROM app_data"], socket: socket)
        #expect(try E2E.jsonLines(json.stdout).dropFirst().first == ["rows": [[.string(evil)]]])
        #expect(try E2E.accountctl(["set", "user", "k\u{1B}[31m", "1"], socket: socket).status == 0)
        let keys = try E2E.accountctl(["keys", "user"], socket: socket)
        #expect(keys.stdout.contains("k\\u{1B}[31m") && !keys.stdout.contains("\u{1B}"), "\(keys.stdout.debugDescription)")
    }

    /// An integer outside 64 bits was bound as text without a word.
    @Test func anIntegerOutside64BitsIsAUsageError() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        #expect(try E2E.accountctl(["switch", "alice"], socket: daemon.socket).status == 0)
        let big = try E2E.accountctl(["query", "SELECT typeof(?)", "9223372036854775808"], socket: daemon.socket)
        #expect(big.status == 2 && big.stderr.contains("outside 64 bits"), "\(big.stderr)")
        let edge = try E2E.accountctl(["--json", "query", "SELECT ?", "--", "-9223372036854775808"], socket: daemon.socket)
        #expect(try E2E.jsonLines(edge.stdout).dropFirst().first == ["rows": [[.int(Int64.min)]]], "\(edge.stdout)")
    }
}
