import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `Execute` acknowledges only what a crash cannot take back, and no statement ever sees a
/// migration half done.
@Suite struct DataDurabilityTests {
    @Test func everyAcknowledgedInsertSurvivesKillNine() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        #expect(try daemon.client().callOne("switch alice").error == nil)
        let socket = daemon.socket
        let acknowledged = E2E.Locked<[Int64]>([])
        let stop = E2E.Locked(false)
        // 32 clients, each on its own connection, inserting one row per Execute until the daemon dies.
        let crowd = ClientCrowd(32, socket: socket) { worker, client in
            var next = Int64(worker) * 1_000_000
            while !stop.current {
                next += 1
                let line = DataCalls.execute("alice", [("INSERT INTO user_info(user_id, user_name) VALUES (?, ?)", [.int(next), .string("w\(worker)")])])
                guard let reply = try? client.callOne(line) else { return }
                guard reply.error == nil else { continue }
                acknowledged.withLock { $0.append(next) }
            }
        }
        _ = waitUntil(timeout: 20) { acknowledged.current.count >= 500 }
        _ = daemon.stop(signal: SIGKILL)
        stop.withLock { $0 = true }
        #expect(crowd.wait(timeout: 60))
        let acked = Set(acknowledged.current)
        #expect(acked.count >= 100, "only \(acked.count) inserts were acknowledged before the kill")

        try daemon.restart()
        let replies = try daemon.client().call(DataCalls.query("alice", "SELECT user_id FROM user_info", more: true))
        let stored = Set(replies.flatMap { $0.parameters["rows"]?.arrayValue ?? [] }.compactMap { $0.arrayValue?.first?.intValue })
        let lost = acked.subtracting(stored)
        #expect(lost.isEmpty, "\(lost.count) of \(acked.count) acknowledged rows are gone, e.g. \(lost.sorted().prefix(5))")
        #expect(try E2E.sql(daemon.accountPath("alice"), "PRAGMA integrity_check;") == "ok")
    }

    @Test func aQueryNeverSeesAMigrationHalfDone() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"])
        let v2 = try BundleFixture.write(
            at: dir.sub("v2"),
            steps: [
                "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);",
                """
                CREATE TABLE notes_new (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT);
                INSERT INTO notes_new (id, title, body) SELECT id, substr(body, 1, 8), body FROM notes;
                DROP TABLE notes;
                ALTER TABLE notes_new RENAME TO notes;
                CREATE INDEX notes_title ON notes(title);
                """,
            ])
        let old = try E2E.daemon(directory: dir.path, bundle: v1)
        #expect(try old.client().callOne("switch alice").error == nil)
        #expect(try old.client().callOne("switch bob").error == nil, "alice is not active: the new daemon does not migrate her at start")
        try E2E.sql(
            old.accountPath("alice"),
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) INSERT INTO notes(id, body) SELECT i, 'note number ' || i FROM n;")
        #expect(E2E.stop(old) == 0)

        let daemon = try E2E.daemon(directory: dir.path, bundle: v2)
        let socket = daemon.socket
        let migrating = Thread {
            _ = try? RawClient(socket: socket).callOne(#"{"method":"io.accountd.Migrate","parameters":{"accounts":["alice"]}}"#)
        }
        let seen = E2E.Locked<[String]>([])
        let sql = "SELECT (SELECT group_concat(name) FROM pragma_table_info('notes')), count(*), (SELECT count(*) FROM sqlite_master WHERE name = 'notes_new') FROM notes"
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let client = try? RawClient(socket: socket) else { return }
                for _ in 0..<10 {
                    guard let reply = try? client.callOne(DataCalls.query("alice", sql)) else { return }
                    seen.withLock { $0.append(reply.error.map { $0.rawValue } ?? (reply.parameters["rows"]?.serialized() ?? "?")) }
                }
            }.start()
        }
        migrating.start()
        #expect(group.wait(timeout: .now() + 120) == .success)
        let results = seen.current
        #expect(results.count == 40)
        // Every read is of the migrated file, whole: the new columns, every row, no table in between.
        for result in results {
            #expect(result == #"[["id,title,body",300000,0]]"#, "a Query saw \(result)")
        }
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 2)
    }
}
