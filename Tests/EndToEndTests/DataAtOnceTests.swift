import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A short `Query` of a warm account is answered on the event loop that read it, without a
/// pool thread (`DataService.queryAtOnce`); a statement that needs more than the bounded
/// steps there runs again on the pool, with the same answer and the same limits.
@Suite struct DataAtOnceTests {
    static let point = "SELECT user_name FROM user_info WHERE user_id = ?"

    @Test func aPointReadOfAWarmAccountIsAnsweredWhileEveryPoolThreadIsBusy() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "20000"])
        let client = try daemon.client()
        try #require(try client.callOne("switch bob").error == nil)
        // The first read compiles the statement on a pool thread and leaves its connection idle;
        // the next ones run at once, and stay within the bound however many ran before them.
        for round in 0..<300 {
            let read = try client.callOne(DataCalls.query("alice", Self.point, [JSONValue(round % 2 + 1)]))
            #expect(read.parameters["rows"] == [[JSONValue.string(round % 2 == 0 ? "ann" : "ben")]], "\(read.parameters)")
        }

        // More statements on bob than the daemon has pool threads (16 on two cores), each for 20 s.
        var busy: [RawClient] = []
        defer { for other in busy { close(other.fd) } }
        for _ in 0..<24 {
            let other = try daemon.client()
            try other.send(DataCalls.query("bob", DataLimitsTests.forever) + "\n")
            busy.append(other)
        }
        Thread.sleep(forTimeInterval: 0.5)

        let started = Date()
        let ann = try client.callOne(DataCalls.query("alice", Self.point, [1]))
        let ben = try client.callOne(DataCalls.query("alice", Self.point, [2]))
        let took = Date().timeIntervalSince(started)
        #expect(ann.parameters["rows"] == [["ann"]] && ben.parameters["rows"] == [["ben"]], "\(ann.parameters) \(ben.parameters)")
        #expect(took < 2, "two point reads took \(took) s while the pool was busy")
    }

    @Test func aStatementOverTheBoundRunsOnThePoolWithTheSameAnswerAndLimits() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(
            dir, environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "500", "ACCOUNTD_LIMITS_QUERY_MAX_ROWS": "3000"])
        let client = try daemon.client()
        let insert = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) INSERT INTO app_data(key) SELECT i FROM n"
        #expect(try client.callOne(DataCalls.execute("alice", [(insert, [])])).error == nil)

        // Each statement twice: the second time it is compiled and its connection idle, so it
        // starts on the event loop, runs out of steps there and is run again on the pool.
        for _ in 0..<2 {
            let count = try client.callOne(DataCalls.query("alice", "SELECT count(*) FROM app_data"))
            #expect(count.parameters["rows"] == [[5000]], "\(count.parameters)")
            let rows = try client.callOne(DataCalls.query("alice", "SELECT key FROM app_data"))
            #expect(rows.parameters["rowCount"] == 3000 && rows.parameters["truncated"] == true, "\(rows.parameters["rowCount"] ?? .null)")
            let stopped = try client.callOne(DataCalls.query("alice", DataLimitsTests.forever))
            #expect(stopped.error == .queryTimeout, "\(stopped.parameters)")
            let refused = try client.callOne(DataCalls.query("alice", "SELECT * FROM user_info WHERE user_id = ?", [1, 2]))
            #expect(refused.error != nil && refused.error != .queryTimeout, "\(refused.parameters)")
        }
        let point = try client.callOne(DataCalls.query("alice", Self.point, [2], maxRows: 1))
        #expect(point.parameters["rows"] == [["ben"]] && point.parameters["truncated"] == false, "\(point.parameters)")
    }
}
