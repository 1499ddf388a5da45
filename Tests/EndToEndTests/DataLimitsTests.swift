import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The limits that protect the others: `limits.queryTimeoutMs` stops a statement, a client
/// that leaves stops its own and frees its thread, and a reply without `more` carries at
/// most `limits.queryMaxRows` rows.
@Suite struct DataLimitsTests {
    /// A statement that would run for minutes.
    static let forever = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"

    @Test func aLongStatementIsStoppedAtTheTimeoutAndAnExecuteKeepsNothing() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "500"])
        let client = try daemon.client()
        let path = daemon.accountPath("alice")
        let contents = try DataCalls.contents(client)

        let started = Date()
        let reply = try client.callOne(DataCalls.query("alice", Self.forever))
        let took = Date().timeIntervalSince(started)
        #expect(reply.error == .queryTimeout, "\(reply.parameters)")
        #expect(reply.parameters["timeoutMs"] == 500)
        #expect(took >= 0.45 && took < 3, "stopped after \(took) s")

        let write = try client.callOne(
            DataCalls.execute(
                "alice",
                [
                    ("DELETE FROM user_info", []),
                    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) INSERT INTO app_data(key) SELECT n FROM r", []),
                ]))
        #expect(write.error == .queryTimeout, "\(write.parameters)")
        #expect(try DataCalls.contents(client) == contents, "nothing of the stopped Execute was kept")
        // The connection and the account serve the next request at once.
        #expect(try client.callOne(DataCalls.query("alice", "SELECT count(*) FROM user_info")).parameters["rows"] == [[2]])
    }

    @Test func clientsThatLeaveStopTheirStatementsAndFreeTheirThreads() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "120000"])
        // More statements than the daemon has pool threads (16 on two cores): were a thread
        // kept by a statement whose client left, the query after them would wait two minutes.
        var clients: [RawClient] = []
        for _ in 0..<24 {
            let client = try daemon.client()
            try client.send(DataCalls.query("alice", Self.forever) + "\n")
            clients.append(client)
        }
        Thread.sleep(forTimeInterval: 0.5)
        let left = Date()
        for client in clients { close(client.fd) }
        clients.removeAll()

        let other = try daemon.client()
        let reply = try other.callOne(DataCalls.query("alice", "SELECT count(*) FROM user_info"))
        #expect(reply.parameters["rows"] == [[2]], "\(reply.parameters)")
        let answered = Date().timeIntervalSince(left)
        #expect(answered < 1.5, "the next query was answered \(answered) s after the clients left")
        // Each statement ended as ClientGone, promptly.
        let counted = waitUntil(timeout: 2) {
            let text = (try? other.callOne("metrics"))?.parameters["text"]?.stringValue ?? ""
            return text.contains(#"accountd_requests_total{method="Query",outcome="ClientGone"} 24"#)
        }
        #expect(counted, "24 Query requests counted ClientGone within 2 s of their clients leaving")
    }

    @Test func withoutMoreAReplyCarriesAtMostTheLimitAndSaysItWasTruncated() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_QUERY_MAX_ROWS": "100"])
        let client = try daemon.client()
        let insert = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 148) INSERT INTO app_data(key) SELECT i FROM n"
        #expect(try client.callOne(DataCalls.execute("alice", [(insert, [])])).error == nil)
        let sql = "SELECT user_name FROM user_info UNION ALL SELECT key FROM app_data"

        let whole = try client.callOne(DataCalls.query("alice", sql))
        #expect(whole.parameters["rowCount"] == 100 && whole.parameters["truncated"] == true)
        #expect(whole.parameters["rows"]?.arrayValue?.count == 100)
        let fewer = try client.callOne(DataCalls.query("alice", sql, maxRows: 10))
        #expect(fewer.parameters["rowCount"] == 10 && fewer.parameters["truncated"] == true)
        let exact = try client.callOne(DataCalls.query("alice", "SELECT * FROM user_info"))
        #expect(exact.parameters["rowCount"] == 2 && exact.parameters["truncated"] == false)

        // With more, every row, in chunks, and the limit does not apply.
        let streamed = try client.call(DataCalls.query("alice", sql, more: true))
        #expect(streamed.first?.parameters["columns"] == ["user_name"])
        let rows = streamed.dropFirst().dropLast().flatMap { $0.parameters["rows"]?.arrayValue ?? [] }
        #expect(rows.count == 150)
        #expect(streamed.last?.parameters == ["rowCount": 150, "truncated": false])
        let bounded = try client.call(DataCalls.query("alice", sql, maxRows: 20, more: true))
        #expect(bounded.last?.parameters == ["rowCount": 20, "truncated": true])
    }

    @Test func aClientThatDoesNotReadHoldsACursorNotTheResult() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "60000"])
        let client = try daemon.client()
        let insert = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) INSERT INTO app_data(key, value) SELECT i, printf('%0100d', i) FROM n"
        #expect(try client.callOne(DataCalls.execute("alice", [(insert, [])])).error == nil)
        let pid = daemon.process.processIdentifier
        let before = try #require(Hostile.rssKiB(pid))

        // About 25 MB of replies, asked for and not read for a while.
        let reader = try daemon.client()
        try reader.send(DataCalls.query("alice", "SELECT key, value FROM app_data", more: true) + "\n")
        Thread.sleep(forTimeInterval: 2)
        let during = try #require(Hostile.rssKiB(pid))
        #expect(during - before < 12_000, "the daemon grew by \(during - before) KiB while its client did not read")
        // Other requests are answered meanwhile.
        #expect(try client.callOne(DataCalls.query("alice", "SELECT count(*) FROM app_data")).parameters["rows"] == [[200000]])

        var rows = 0
        while true {
            let reply = try reader.readReply()
            rows += reply.parameters["rows"]?.arrayValue?.count ?? 0
            if !reply.continues {
                #expect(reply.parameters == ["rowCount": 200000, "truncated": false])
                break
            }
        }
        #expect(rows == 200000)
    }
}
