import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Values come back as SQLite holds them, replies say what each statement did, and one
/// request cannot make the daemon hold a giant value (issue 31's hostile review, findings 3
/// to 7).
@Suite struct DataValuesTests {
    /// An infinite real came back as `null` (a NULL to the app) and text bytes that are not
    /// UTF-8 as U+FFFD; both now have object forms, which also bind.
    @Test func infinitiesAndTextThatIsNotUTF8ComeBackAsTheyAre() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let read = try client.callOne(DataCalls.query("alice", "SELECT 1e999, -1e999, CAST(x'ff00fe' AS TEXT), typeof(CAST(x'ff' AS TEXT))"))
        #expect(read.error == nil, "\(read.encoded())")
        let expected: JSONValue = [[
            ["real": "Infinity"], ["real": "-Infinity"], ["textBase64": .string(Base64.encode([0xFF, 0x00, 0xFE]))], "text",
        ]]
        #expect(read.parameters["rows"] == expected, "\(read.encoded())")

        // Written back through parameters, they are the same values.
        let values: [JSONValue] = [["real": "Infinity"], ["textBase64": .string(Base64.encode([0xFF, 0x00, 0xFE]))]]
        let back = try client.callOne(DataCalls.query("alice", "SELECT typeof(?1), ?1 = 1e999, typeof(?2), hex(?2)", values))
        #expect(back.parameters["rows"] == [["real", 1, "text", "FF00FE"]], "\(back.encoded())")
        let bad = try client.callOne(DataCalls.query("alice", "SELECT ?", [["real": "1.5"]]))
        #expect(bad.error == .invalidParameter, "\(bad.encoded())")
    }

    /// A NUL in `sql` made SQLite stop reading there: `SELECT 1\0; DROP ...` ran the first
    /// part and answered as if the text were one statement.
    @Test func sqlWithANulIsRefusedAndNothingRuns() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let query = try client.callOne(DataCalls.query("alice", "SELECT 1\u{0}; DROP TABLE user_info"))
        #expect(query.error == .statementNotAllowed, "\(query.encoded())")
        let execute = try client.callOne(DataCalls.execute("alice", [("DELETE FROM user_info\u{0}; junk", [])]))
        #expect(execute.error == .statementNotAllowed, "\(execute.encoded())")
        #expect(try client.callOne(DataCalls.query("alice", "SELECT count(*) FROM user_info")).parameters["rows"] == [[2]])
    }

    /// A statement that only reads reported the previous write's `changes` and
    /// `lastInsertRowid` (SQLite keeps them per connection); so did a pragma (hostile31d F3).
    @Test func eachResultSaysWhatItsOwnStatementDid() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let reply = try client.callOne(
            DataCalls.execute("alice", [("UPDATE user_info SET age = age", []), ("PRAGMA journal_mode", []), ("SELECT 1", []), ("INSERT INTO app_data VALUES ('k', 'v')", []), ("UPDATE app_data SET value = 'w'", [])]))
        #expect(reply.error == nil, "\(reply.encoded())")
        #expect(
            reply.parameters["results"]
                == [
                    ["changes": 2, "lastInsertRowid": 0], ["changes": 0, "lastInsertRowid": 0], ["changes": 0, "lastInsertRowid": 0], ["changes": 1, "lastInsertRowid": 1], ["changes": 1, "lastInsertRowid": 0],
                ],
            "\(reply.encoded())")
    }

    /// `{"a": 1}` for `SELECT :a, $a` was refused with "-1 named value(s) match no parameter".
    @Test func oneNameForTwoPrefixesBindsBothAndAnUnknownNameIsNamed() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let both = try client.callOne(DataCalls.line("Query", [("account", "alice"), ("sql", "SELECT :a, $a"), ("parameters", ["a": 7])]))
        #expect(both.parameters["rows"] == [[7, 7]], "\(both.encoded())")
        let unknown = try client.callOne(DataCalls.line("Query", [("account", "alice"), ("sql", "SELECT :a"), ("parameters", ["a": 1, "zz": 2])]))
        #expect(unknown.error == .invalidParameter && unknown.parameters["message"]?.stringValue?.contains("zz") == true, "\(unknown.encoded())")
    }

    /// One `SELECT randomblob(999999999)` took the daemon to 7 GB. A value a statement makes
    /// or reads is now at most 16 MiB, refused with SQLITE_TOOBIG, and the daemon stays small.
    @Test func aGiantValueIsRefusedAndTheDaemonStaysSmall() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        for sql in ["SELECT randomblob(999999999)", "SELECT CAST(zeroblob(100000000) AS TEXT)", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 40) SELECT group_concat(hex(randomblob(500000)), '') FROM r"] {
            let reply = try client.callOne(DataCalls.query("alice", sql))
            #expect(reply.error == .sqlError, "\(sql): \(reply.encoded())")
            #expect(reply.parameters["code"] == 18 && reply.parameters["message"]?.stringValue?.contains("16 MiB") == true, "\(reply.encoded())")
        }
        let growing = try client.callOne(DataCalls.execute("alice", [("INSERT INTO app_data VALUES ('big', zeroblob(20000000))", [])]))
        #expect(growing.error == .sqlError, "\(growing.encoded())")
        let fine = try client.callOne(DataCalls.query("alice", "SELECT length(randomblob(1000000))"))
        #expect(fine.parameters["rows"] == [[1_000_000]], "\(fine.encoded())")
        let rss = try #require(Self.residentKiB(daemon.process.processIdentifier))
        #expect(rss < 400_000, "the daemon holds \(rss) KiB")
    }

    static func residentKiB(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
        return line.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") }
    }
}
