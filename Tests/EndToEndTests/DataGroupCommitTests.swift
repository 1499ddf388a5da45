import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Concurrent `Execute`s on one account share transactions: each is still all or nothing,
/// whatever the others in its transaction do.
@Suite struct DataGroupCommitTests {
    @Test func eachExecuteInASharedCommitIsAllOrNothing() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "300"])
        #expect(try daemon.client().callOne("switch alice").error == nil)
        let socket = daemon.socket
        let outcomes = E2E.Locked<[Int64: String]>([:])
        // 32 clients at once, 20 Executes each. Of each client's Executes, one in three fails on
        // its second statement (a duplicate key), one in seven runs until the timeout stops it
        // (which takes the shared transaction with it): the others must be kept, whole.
        let crowd = ClientCrowd(32, socket: socket) { worker, client in
            for round in 0..<20 {
                let id = Int64(worker * 1000 + round)
                var statements: [(String, [JSONValue])] = [("INSERT INTO user_info(user_id, user_name) VALUES (?, 'first')", [.int(id)])]
                if round % 3 == 1 {
                    statements.append(("INSERT INTO user_info(user_id, user_name) VALUES (?, 'again')", [.int(id)]))
                } else if round % 7 == 2 {
                    statements.append(("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) INSERT INTO app_data(key) SELECT n FROM r", []))
                } else {
                    statements.append(("INSERT INTO app_data(key, value) VALUES (?, 'second')", [.string("k\(id)")]))
                }
                guard let reply = try? client.callOne(DataCalls.execute("alice", statements)) else { return }
                outcomes.withLock { $0[id] = reply.error?.shortName ?? "ok" }
            }
        }
        #expect(crowd.wait(timeout: 120))
        let all = outcomes.current
        #expect(all.count == 640)
        let client = try daemon.client()
        let users = try client.call(DataCalls.query("alice", "SELECT user_id FROM user_info", more: true))
        let stored = Set(users.flatMap { $0.parameters["rows"]?.arrayValue ?? [] }.compactMap { $0.arrayValue?.first?.intValue })
        let keys = try client.call(DataCalls.query("alice", "SELECT key FROM app_data", more: true))
        let storedKeys = Set(keys.flatMap { $0.parameters["rows"]?.arrayValue ?? [] }.compactMap { $0.arrayValue?.first?.stringValue })
        for (id, outcome) in all {
            let round = id % 1000
            let expected = round % 3 == 1 ? "SQLError" : (round % 7 == 2 ? "QueryTimeout" : "ok")
            #expect(outcome == expected, "Execute \(id): \(outcome), expected \(expected)")
            #expect(stored.contains(id) == (outcome == "ok"), "Execute \(id) (\(outcome)): its first row is \(stored.contains(id) ? "kept" : "gone")")
            if expected == "ok" { #expect(storedKeys.contains("k\(id)"), "Execute \(id): its second row is gone") }
        }
        #expect(storedKeys.allSatisfy { $0.hasPrefix("k") }, "nothing of a stopped Execute was kept")
    }
}
