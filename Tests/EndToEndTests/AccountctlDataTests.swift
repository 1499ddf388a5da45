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
}
