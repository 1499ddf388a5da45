import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Synchronization
import Testing

@testable import AccountdCore

/// The preference table's group commit: writers share transactions, every accepted write
/// is committed before ``PreferenceDatabase/close()`` returns, and commits run where the
/// owner says, one at a time.
@Suite struct PreferenceDatabaseTests {
    /// Blocking work in a detached task: the tests' stand-in for the daemon's blocking pool.
    static let runner: PreferenceDatabase.Runner = { work in Task.detached { work() } }
    /// A timer in a task: the tests' stand-in for an event loop's.
    static let timer: PreferenceDatabase.Schedule = { delay, work in
        Task {
            try? await Task.sleep(for: delay)
            work()
        }
    }

    /// A runner that keeps the work it is handed until the test runs it.
    final class HeldRunner: Sendable {
        private let held = Mutex<[@Sendable () -> Void]>([])
        var runner: PreferenceDatabase.Runner { { work in self.held.withLock { $0.append(work) } } }
        var handed: Int { held.withLock { $0.count } }
        /// Runs what was handed over, and what that hands over, until nothing is left.
        func runAll() {
            while let work = held.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { work() }
        }
    }

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
        let database = try PreferenceDatabase(
            path: dir.sub("device.sqlite"), table: "prefs", groupCommit: groupCommit, create: true, run: Self.runner, schedule: Self.timer)
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
        await database.close()
        #expect(try Self.rows(dir.sub("device.sqlite")) == 320)
    }

    /// Writes are accepted as fast as a loop can hand them over, and close() follows at
    /// once: when it returns, every accepted write has been told it is committed and is in
    /// the file; a write after it is refused with `Closed`.
    @Test func closeReturnsOnlyOnceEveryAcceptedWriteIsCommitted() async throws {
        let dir = TestDirectory()
        let path = dir.sub("device.sqlite")
        let database = try PreferenceDatabase(path: path, table: "prefs", create: true, run: Self.runner, schedule: Self.timer)
        let completions = Completions()
        for index in 0..<500 { database.apply(Self.set(index), then: completions.record) }
        await database.close()
        #expect(completions.current == (committed: 500, closed: 0, failed: 0))
        database.apply(Self.set(500), then: completions.record)
        #expect(completions.current == (committed: 500, closed: 1, failed: 0))
        #expect(try Self.rows(path) == 500)
    }

    /// The table has one writer: however many changes arrive, one commit at a time is
    /// handed to the runner; a close waits for it, and the close itself runs there too.
    @Test func oneCommitAtATimeAndCloseWaitsForIt() throws {
        let dir = TestDirectory()
        let path = dir.sub("device.sqlite")
        let held = HeldRunner()
        let database = try PreferenceDatabase(path: path, table: "prefs", create: true, run: held.runner, schedule: Self.timer)
        let completions = Completions()
        for index in 0..<10 { database.apply(Self.set(index), then: completions.record) }
        #expect(held.handed == 1)  // one writer
        #expect(completions.current == (committed: 0, closed: 0, failed: 0))
        let closed = Atomic(false)
        database.close { closed.store(true, ordering: .relaxed) }
        database.apply(Self.set(10), then: completions.record)
        #expect(completions.current == (committed: 0, closed: 1, failed: 0))
        let closedEarly = closed.load(ordering: .relaxed)
        #expect(!closedEarly && held.handed == 1)
        held.runAll()
        let closedAfter = closed.load(ordering: .relaxed)
        #expect(closedAfter)
        #expect(completions.current == (committed: 10, closed: 1, failed: 0))
        #expect(database.transactions == 1)
        #expect(try Self.rows(path) == 10)
        // Closed already: told at once.
        let again = Atomic(false)
        database.close { again.store(true, ordering: .relaxed) }
        let toldAtOnce = again.load(ordering: .relaxed)
        #expect(toldAtOnce)
    }

    /// A table nobody is writing to is closed on the calling thread: when closeHere returns,
    /// its connection is closed and its WAL gone (a refused account's file is left as it was).
    @Test func closeHereClosesAnIdleTableOnTheCallingThread() throws {
        let dir = TestDirectory()
        let path = dir.sub("device.sqlite")
        let held = HeldRunner()
        let database = try PreferenceDatabase(path: path, table: "prefs", create: true, run: held.runner)
        let completions = Completions()
        database.apply(Self.set(1), then: completions.record)
        held.runAll()
        #expect(completions.current == (committed: 1, closed: 0, failed: 0))
        let closed = Atomic(false)
        database.closeHere { closed.store(true, ordering: .relaxed) }
        let closedOnReturn = closed.load(ordering: .relaxed)
        #expect(closedOnReturn && held.handed == 0)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(try Self.rows(path) == 1)
    }

    /// One batch that sets, overwrites and deletes the same keys in turn: the file holds
    /// each key's last state, and each writer gets the answer of its own change in
    /// arrival order (a delete: whether the key existed just before it).
    @Test func aBatchWritesEachKeysLastStateAndAnswersEachChangeInOrder() async throws {
        let dir = TestDirectory()
        let path = dir.sub("device.sqlite")
        let first = try PreferenceDatabase(path: path, table: "prefs", create: true, run: Self.runner)
        _ = try await first.apply(.set(namespace: "ui", key: "kept", value: .string("old")))
        _ = try await first.apply(.set(namespace: "ui", key: "gone", value: .int(1)))
        await first.close()

        // A runner that holds the commit until every change is queued: one batch takes them all.
        let held = HeldRunner()
        let database = try PreferenceDatabase(path: path, table: "prefs", create: true, run: held.runner)
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
        database.close {}
        held.runAll()
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
        let reopened = try PreferenceDatabase(path: path, table: "prefs", create: true, run: Self.runner)
        #expect(reopened.get("ui", "kept") == .string("newer \"quoted\" é"))
        #expect(reopened.get("ui", "gone") == nil && reopened.get("ui", "brief") == nil)
        #expect(reopened.keys("other") == ["back"])
        await reopened.close()
    }
}
