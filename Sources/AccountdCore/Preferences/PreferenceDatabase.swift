import AccountdProtocol
import Foundation
import GRDB
import Synchronization

/// Told of every commit of a ``PreferenceDatabase``, on the committing thread: how many
/// changes it held, how long it took, and whether it failed. It must return at once.
public typealias PreferenceCommitObserver = @Sendable (_ changes: Int, _ duration: Duration, _ failed: Bool) -> Void

/// A preference table in one SQLite file, with durable group commit.
///
/// Every `set` and `delete` is answered only after the transaction holding it has
/// committed with `synchronous = FULL` in WAL mode, which syncs the WAL before the
/// commit returns: an acknowledged write survives a crash or a power loss.
/// Writes that arrive while a commit is running are gathered into the next
/// transaction, so many concurrent writers share one sync (group commit) instead of
/// paying one each.
///
/// Reads are served from an in-memory copy of the table, loaded when the database is
/// opened and updated after each commit: the daemon is the only writer of its
/// preference tables. Reading never writes: a file without the table reads as empty, and
/// the table (and WAL mode) comes with the first write.
///
/// Commits run on a thread the owner provides (``Runner``: the daemon's blocking pool),
/// one drain at a time per database; nothing here has a thread or a queue of its own.
/// Writers never wait on a thread: they are called back once their change is committed.
public final class PreferenceDatabase: Sendable {
    /// One change.
    public enum Change: Sendable {
        case set(namespace: String, key: String, value: JSONValue)
        case delete(namespace: String, key: String)

        /// The value set, or nil for a delete.
        public var value: JSONValue? {
            if case .set(_, _, let value) = self { value } else { nil }
        }
    }

    /// What a writer is told once its change is committed: for a delete, whether the key
    /// existed; for a set, true. Or why it failed.
    public typealias Completion = @Sendable (Result<Bool, any Error>) -> Void

    /// Where blocking work runs: it runs `work` on a thread that may block on SQLite and
    /// fsync, and returns at once. The daemon passes its blocking pool; a runner may also
    /// drop `work` (a pool that is shutting down), which ``close()`` then does itself.
    public typealias Runner = @Sendable (_ work: @escaping @Sendable () -> Void) -> Void

    /// A runner that starts a thread for each drain: for tools and tests without a pool.
    public static let threadPerDrain: Runner = { work in Thread { work() }.start() }

    private struct Pending {
        var change: Change
        var done: Completion
    }

    /// Where the committing work stands: at most one drain runs at a time.
    private enum Drain {
        /// Nothing queued, nothing running.
        case idle
        /// Handed to the runner, not started yet: ``close()`` may run it itself.
        case scheduled
        /// Committing, on the runner's thread or in ``close()``.
        case running
    }

    private struct State {
        var queue: [Pending] = []
        var drain = Drain.idle
        var closed = false
        var values: [String: [String: JSONValue]] = [:]
        /// How many writers were active at the end of the last commit (those it answered and
        /// those already waiting), and how long it took: whom the next commit may wait
        /// for, and for how long.
        var activeWriters = 0
        var lastCommit: Duration = .zero
        /// While the committing thread gathers: how many changes it waits for.
        var gatheringFor = 0
        /// Transactions begun so far.
        var transactions = 0
    }

    /// The file this table lives in.
    public let path: String
    private let table: String
    /// The statements that write a batch (``PreferenceBatch``).
    private let upsertSQL: String
    private let deleteSQL: String
    /// The connection that writes: opened at once with `create`, else by the first write.
    /// Used by the committing thread, and by ``close()`` once that thread is done.
    private let connection: Mutex<DatabaseQueue?>
    private let groupCommit: Bool
    private let observer: PreferenceCommitObserver?
    /// The state, and the condition that the committing thread waits on while it gathers,
    /// and ``close()`` while a drain runs.
    private let state = Monitor(State())
    private let run: Runner

    /// Opens the preference table `table` in the SQLite file at `path` and loads its values.
    ///
    /// With `create`, the file and the table are made now if missing (the daemon's own
    /// `device.sqlite`). Without it (an account's file), the file must exist and is only
    /// read: a file without the table reads as empty, and the connection is closed again.
    /// The first write opens it again, in WAL mode, and creates the table if needed.
    ///
    /// - Parameters:
    ///   - groupCommit: when false, every change gets a transaction of its own (for
    ///     comparison in benchmarks).
    ///   - run: where commits run (see ``Runner``).
    ///   - observer: told of each commit (the daemon's metrics).
    public init(
        path: String, table: String, groupCommit: Bool = true, create: Bool, run: @escaping Runner = threadPerDrain,
        observer: PreferenceCommitObserver? = nil
    ) throws {
        self.path = path
        self.table = table
        upsertSQL = PreferenceBatch.upsertSQL(table)
        deleteSQL = PreferenceBatch.deleteSQL(table)
        self.groupCommit = groupCommit
        self.run = run
        self.observer = observer
        if !FileSystem.exists(path) {
            guard create else { throw Self.missing(path) }
            try FileSystem.createExclusive(path)
        }
        let database = try DatabaseQueue(path: path, configuration: Self.configuration(wal: create))
        var values: [String: [String: JSONValue]] = [:]
        try database.read { db in
            guard try db.tableExists(table) else { return }
            for row in try Row.fetchAll(db, sql: "SELECT namespace, key, value FROM \(table)") {
                let text: String = row["value"]
                values[row["namespace"], default: [:]][row["key"]] = (try? JSONParser.parse(text)) ?? .string(text)
            }
        }
        if create {
            try Self.prepareForWriting(database, table: table)
            connection = Mutex(database)
        } else {
            try database.close()
            connection = Mutex(nil)
        }
        state.withLock { $0.values = values }
    }

    private static func missing(_ path: String) -> AccountdError {
        AccountdError(.storage, "\(path) does not exist; preferences are kept only in a file that exists", file: path)
    }

    /// How preference connections are configured; `wal` switches the file to WAL mode, a write.
    private static func configuration(wal: Bool) -> Configuration {
        var config = Connections.configuration(foreignKeys: false, label: "preferences")
        if wal { config.journalMode = .wal }
        return config
    }

    /// Makes `database` ready to take changes: `synchronous = FULL` and the table.
    private static func prepareForWriting(_ database: DatabaseQueue, table: String) throws {
        try Connections.requireFullSync(database)
        try database.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS \(table) (
                      namespace TEXT NOT NULL,
                      key TEXT NOT NULL,
                      value TEXT NOT NULL,
                      updated_at TEXT NOT NULL,
                      PRIMARY KEY (namespace, key)
                    ) WITHOUT ROWID
                    """)
        }
    }

    /// The connection for a commit, opened (in WAL mode, with the table) by the first write.
    /// On the committing thread only.
    private func writer() throws -> DatabaseQueue {
        if let open = connection.withLock({ $0 }) { return open }
        // Opening would create a file that went away; an account file is made only by a switch.
        guard FileSystem.exists(path) else { throw Self.missing(path) }
        let database = try DatabaseQueue(path: path, configuration: Self.configuration(wal: true))
        do {
            try Self.prepareForWriting(database, table: table)
        } catch {
            try? database.close()
            throw error
        }
        connection.withLock { $0 = database }
        return database
    }

    /// The value of `key` in `namespace`, or nil.
    public func get(_ namespace: String, _ key: String) -> JSONValue? {
        state.withLock { $0.values[namespace]?[key] }
    }

    /// The keys of `namespace`, sorted.
    public func keys(_ namespace: String) -> [String] {
        state.withLock { $0.values[namespace].map { Array($0.keys) } ?? [] }.sorted()
    }

    /// How many transactions were begun since the database was opened, committed or failed:
    /// with group commit, fewer than the changes when writers overlap.
    var transactions: Int { state.withLock { $0.transactions } }

    /// The database was closed (its account is being migrated or restored); open it again and retry.
    public struct Closed: Error {}

    /// Applies a change and returns once it is durably committed.
    ///
    /// - Returns: for a delete, whether the key existed; for a set, true.
    /// - Throws: ``AccountdError`` (`storage`) when the commit fails, e.g. the disk is full;
    ///   the change is then not applied. ``Closed`` when the database was closed first.
    public func apply(_ change: Change) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            apply(change) { continuation.resume(with: $0) }
        }
    }

    /// Applies a change and calls `done` on the committing thread once it is durably
    /// committed, or with the failure: ``Closed``, or ``AccountdError`` (`storage`).
    ///
    /// For callers that must not wait: the connection handlers use it to answer a Set
    /// without a task of its own.
    public func apply(_ change: Change, then done: @escaping Completion) {
        enum Next { case closed, drain, wake, none }
        let next = state.withLock { state -> Next in
            if state.closed { return .closed }
            state.queue.append(Pending(change: change, done: done))
            if state.drain == .idle {
                state.drain = .scheduled
                return .drain
            }
            guard state.gatheringFor > 0, state.queue.count >= state.gatheringFor else { return .none }
            state.gatheringFor = 0  // one signal per gather
            return .wake
        }
        switch next {
        case .closed: done(.failure(Closed()))
        case .drain: run { self.startDrain() }
        case .wake: state.broadcast()
        case .none: break
        }
    }

    /// Runs the drain handed to the runner, unless ``close()`` took it over first.
    private func startDrain() {
        let mine = state.withLock { state in
            guard state.drain == .scheduled else { return false }
            state.drain = .running
            return true
        }
        if mine { drain() }
    }

    /// Commits whatever is queued, batch after batch, until the queue is empty.
    private func drain() {
        while true {
            if groupCommit { gather() }
            let batch: [Pending] = state.withLock { state in
                guard !state.queue.isEmpty else {
                    state.drain = .idle
                    return []
                }
                state.transactions += 1
                if groupCommit {
                    defer { state.queue.removeAll() }
                    return state.queue
                }
                return [state.queue.removeFirst()]
            }
            if batch.isEmpty {
                state.broadcast()  // to a close() waiting for the drain to end
                return
            }
            let started = ContinuousClock.now
            let committed = commit(batch)
            let took = ContinuousClock.now - started
            observer?(batch.count, took, !committed)
            state.withLock { state in
                state.activeWriters = batch.count + state.queue.count
                state.lastCommit = took
            }
        }
    }

    /// Waits, briefly, for the writers that the last commit answered.
    ///
    /// They usually send their next change within a fraction of a millisecond. Committing
    /// at once would leave them to wait for a whole commit, and the writers would settle
    /// into two groups that take turns, each commit holding half of them. So, while fewer
    /// changes are queued than writers were active, this waits for them, for at most twice
    /// the last commit's time and never more than 1 ms (on the monotonic clock); the writer
    /// that completes the count wakes it at once. Twice, because a writer that misses this
    /// commit waits for all of it and for the next gather: about that long. A lone writer
    /// never waits, and nothing is acknowledged before its commit either way.
    private func gather() {
        let (expected, lastCommit) = state.withLock { ($0.activeWriters, $0.lastCommit) }
        guard expected > 1 else { return }
        let deadline = ContinuousClock.now + min(lastCommit * 2, .milliseconds(1))
        let waiting = state.withLock { state in
            guard state.queue.count < expected else { return false }
            state.gatheringFor = expected
            return true
        }
        guard waiting else { return }
        state.wait(until: deadline) { $0.queue.count >= expected }
        state.withLock { $0.gatheringFor = 0 }
    }

    /// Commits `batch` and answers its writers; false when the commit failed.
    ///
    /// The batch is written as its net effect (``PreferenceBatch``): two statements at
    /// most, however many writers it holds.
    private func commit(_ batch: [Pending]) -> Bool {
        let net = state.withLock { PreferenceBatch(batch.lazy.map(\.change), current: $0.values) }
        do {
            let (upserts, deletes) = (net.upserts, net.deletes)
            try writer().writeWithoutTransaction { db in
                try Self.inTransaction(db) {
                    if let upserts {
                        try db.cachedStatement(sql: upsertSQL).execute(arguments: [upserts, Timestamp.now()])
                    }
                    if let deletes {
                        try db.cachedStatement(sql: deleteSQL).execute(arguments: [deletes])
                    }
                }
            }
        } catch {
            let failure = AccountdError(
                .storage, "saving preferences in \(path) failed: \(ErrorText.of(error)); nothing was changed", file: path)
            for pending in batch { pending.done(.failure(failure)) }
            return false
        }
        state.withLock { net.apply(to: &$0.values) }
        for (pending, existed) in zip(batch, net.answers) { pending.done(.success(existed)) }
        return true
    }

    /// Runs `body` in an immediate transaction and commits it; rolls back if anything fails.
    ///
    /// The same as GRDB's `write`, with its `BEGIN` and `COMMIT` prepared once per
    /// connection: `write` compiles both statements again for every transaction, which
    /// was a tenth of a commit's time on the thread that every writer in the batch waits for.
    private static func inTransaction(_ db: Database, _ body: () throws -> Void) throws {
        try db.cachedStatement(sql: "BEGIN IMMEDIATE").execute()
        do {
            try body()
            try db.cachedStatement(sql: "COMMIT").execute()
        } catch {
            // A failed COMMIT (a full disk) can leave the transaction open; a failed write
            // always does.
            if db.isInsideTransaction { try? db.execute(sql: "ROLLBACK") }
            throw error
        }
    }

    /// Refuses new writes, waits for the accepted ones to commit, then closes the connection
    /// (checkpointing the WAL as far as readers allow). Blocking: call it on a thread that may wait for disk.
    ///
    /// A drain that was handed to the runner but has not started runs here, on the caller's
    /// thread: close never waits for a runner's thread, so callers on a busy pool cannot
    /// wait on one another, and a runner that dropped the work loses no write.
    public func close() {
        let takeOver = state.withLock { state in
            state.closed = true
            guard state.drain == .scheduled else { return false }
            state.drain = .running
            return true
        }
        if takeOver { drain() }
        state.wait { $0.drain == .idle }
        guard let database = connection.withLock({ $0 }) else { return }
        // PASSIVE: it never waits for readers. Another process reading the file (Litestream
        // holds a read transaction on every database it replicates) would make a TRUNCATE
        // checkpoint wait out the whole busy timeout, and then fail anyway.
        try? database.writeWithoutTransaction { _ = try $0.checkpoint(.passive) }
        try? database.close()
    }
}
