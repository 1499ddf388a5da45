import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Synchronization
import Testing

@testable import AccountdCore

/// The preference table's group commit: writers share transactions, every accepted write
/// is committed before ``PreferenceDatabase/close()`` returns, and commits run where the
/// owner says.
@Suite struct PreferenceDatabaseTests {
    /// Counts the completions, successful and failed, from whichever thread calls them.
    final class Completions: Sendable {
        private let counts = Mutex((committed: 0, closed: 0, failed: 0))
        func record(_ result: Result<Bool, any Error>) {
            counts.withLock { counts in
                switch result {
                case .success: counts.committed += 1
                case .failure(let error) where error is PreferenceDatabase.Closed: counts.closed += 1
                case .failure: counts.failed += 1
                }
            }
        }
        var current: (committed: Int, closed: Int, failed: Int) { counts.withLock { $0 } }
    }

    static func set(_ index: Int) -> PreferenceDatabase.Change {
        .set(namespace: "ui", key: "k\(index)", value: .string("v\(index)"))
    }

    /// The rows of the table in the file, read with a connection of its own.
    static func rows(_ path: String) throws -> Int {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM prefs") ?? 0 }
    }

    /// 16 writers, 20 Sets each, each waiting for its commit before the next: with group
    /// commit they share transactions; without it each Set has its own.
    @Test(arguments: [true, false]) func concurrentWritersShareTransactions(groupCommit: Bool) async throws {
        let dir = TestDirectory()
        let database = try PreferenceDatabase(path: dir.sub("device.sqlite"), table: "prefs", groupCommit: groupCommit, create: true)
        try await withThrowingDiscardingTaskGroup { group in
            for writer in 0..<16 {
                group.addTask {
                    for step in 0..<20 { _ = try await database.apply(Self.set(writer * 20 + step)) }
                }
            }
        }
        if groupCommit {
            #expect(database.transactions < 320)
        } else {
            #expect(database.transactions == 320)
        }
        #expect(database.keys("ui").count == 320)
        database.close()
        #expect(try Self.rows(dir.sub("device.sqlite")) == 320)
    }

    /// Writes are accepted as fast as a loop can hand them over, and close() follows at
    /// once: when it returns, every accepted write has been told it is committed and is in
    /// the file; a write after it is refused with `Closed`.
    @Test func closeReturnsOnlyOnceEveryAcceptedWriteIsCommitted() throws {
        let dir = TestDirectory()
        let path = dir.sub("device.sqlite")
        let database = try PreferenceDatabase(path: path, table: "prefs", create: true)
        let completions = Completions()
        for index in 0..<500 { database.apply(Self.set(index), then: completions.record) }
        database.close()
        #expect(completions.current == (committed: 500, closed: 0, failed: 0))
        database.apply(Self.set(500), then: completions.record)
        #expect(completions.current == (committed: 500, closed: 1, failed: 0))
        #expect(try Self.rows(path) == 500)
    }

    /// A runner that drops the work (a pool shutting down) loses no write: close() commits
    /// what was accepted itself.
    @Test func closeCommitsWhatARunnerDropped() throws {
        let dir = TestDirectory()
        let path = dir.sub("device.sqlite")
        let handed = Atomic(0)
        let database = try PreferenceDatabase(
            path: path, table: "prefs", create: true, run: { _ in handed.add(1, ordering: .relaxed) })
        let completions = Completions()
        for index in 0..<10 { database.apply(Self.set(index), then: completions.record) }
        #expect(handed.load(ordering: .relaxed) == 1)  // one drain at a time
        #expect(completions.current == (committed: 0, closed: 0, failed: 0))
        database.close()
        #expect(completions.current == (committed: 10, closed: 0, failed: 0))
        #expect(try Self.rows(path) == 10)
    }

    /// One batch that sets, overwrites and deletes the same keys in turn: the file holds
    /// each key's last state, and each writer gets the answer of its own change in
    /// arrival order (a delete: whether the key existed just before it).
    @Test func aBatchWritesEachKeysLastStateAndAnswersEachChangeInOrder() async throws {
        let dir = TestDirectory()
        let path = dir.sub("device.sqlite")
        let first = try PreferenceDatabase(path: path, table: "prefs", create: true)
        _ = try await first.apply(.set(namespace: "ui", key: "kept", value: .string("old")))
        _ = try await first.apply(.set(namespace: "ui", key: "gone", value: .int(1)))
        first.close()

        // A runner that drops the drain: close() then commits everything queued as one batch.
        let database = try PreferenceDatabase(path: path, table: "prefs", create: true, run: { _ in })
        let changes: [PreferenceDatabase.Change] = [
            .set(namespace: "ui", key: "kept", value: .string("new")),
            .set(namespace: "ui", key: "kept", value: .string("newer \"quoted\" é")),
            .delete(namespace: "ui", key: "gone"),
            .delete(namespace: "ui", key: "gone"),
            .delete(namespace: "ui", key: "never"),
            .set(namespace: "ui", key: "brief", value: .bool(true)),
            .delete(namespace: "ui", key: "brief"),
            .delete(namespace: "other", key: "back"),
            .set(namespace: "other", key: "back", value: .object([("a", .array([.double(1.5), .null]))])),
        ]
        let answers = Mutex([Int: Bool]())
        for (index, change) in changes.enumerated() {
            database.apply(change) { result in answers.withLock { $0[index] = try? result.get() } }
        }
        database.close()
        #expect(database.transactions == 1)
        #expect(answers.withLock { $0 } == [0: true, 1: true, 2: true, 3: false, 4: false, 5: true, 6: true, 7: false, 8: true])

        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let rows = try await queue.read { db in
            try Row.fetchAll(db, sql: "SELECT namespace, key, value FROM prefs ORDER BY namespace, key").map {
                [$0["namespace"], $0["key"], $0["value"]] as [String]
            }
        }
        #expect(rows == [["other", "back", #"{"a":[1.5,null]}"#], ["ui", "kept", #""newer \"quoted\" é""#]])

        // Opened again, the table reads what the batch left.
        let reopened = try PreferenceDatabase(path: path, table: "prefs", create: true)
        #expect(reopened.get("ui", "kept") == .string("newer \"quoted\" é"))
        #expect(reopened.get("ui", "gone") == nil && reopened.get("ui", "brief") == nil)
        #expect(reopened.keys("other") == ["back"])
        reopened.close()
    }
}
