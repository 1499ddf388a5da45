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
/// The table has one writer (``PreferenceWriter``, an explicit state kept in a `Mutex` that
/// is never held across I/O): at most one commit runs at a time, on the thread the owner
/// provides (``Runner``: the daemon's blocking pool), and the short wait that gathers
/// writers into a commit is a timer on the owner's clock (``Schedule``: an event loop's),
/// so no thread ever waits for writers. Nothing here has a thread or a queue of its own.
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
    /// fsync, and returns at once. It must run every `work` it is handed, even while it
    /// shuts down (on the caller's thread, then): a commit handed over is never dropped.
    public typealias Runner = @Sendable (_ work: @escaping @Sendable () -> Void) -> Void

    /// Calls `work` once `delay` has passed, holding no thread meanwhile (the daemon: a
    /// timer on an event loop). Without one, a commit never waits to gather writers.
    public typealias Schedule = @Sendable (_ delay: Duration, _ work: @escaping @Sendable () -> Void) -> Void

    private struct Pending {
        var change: Change
        var done: Completion
    }

    private struct State {
        var writer: PreferenceWriter<Pending>
        var values: [String: [String: JSONValue]] = [:]
        /// Told once the table is closed (``close(then:)``).
        var closers: [@Sendable () -> Void] = []
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
    private let observer: PreferenceCommitObserver?
    /// The writer and the values: never held across I/O.
    private let state: Mutex<State>
    private let run: Runner
    private let schedule: Schedule?
    /// How long a connection waits for another process's lock on the file.
    private let busy: Duration
    /// The account whose file this is (nil for `device.sqlite`): named in every error, and a
    /// lock another process held past ``busy`` is `AccountBusy` for it.
    private let account: AccountName?

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
    ///   - schedule: the timer that ends a gathering (see ``Schedule``).
    ///   - observer: told of each commit (the daemon's metrics).
    ///   - account: the account whose file this is: errors name it, and another process's lock
    ///     held longer than `busy` is `AccountBusy` (``AccountdError/lockedByOtherProcess(_:path:waited:)``).
    ///   - busy: how long to wait for another process's lock (`accounts.lockTimeoutSeconds`).
    public init(
        path: String, table: String, groupCommit: Bool = true, create: Bool, run: @escaping Runner, schedule: Schedule? = nil,
        observer: PreferenceCommitObserver? = nil, account: AccountName? = nil, busy: Duration = .seconds(10)
    ) throws {
        self.busy = busy
        self.account = account
        self.path = path
        self.table = table
        upsertSQL = PreferenceBatch.upsertSQL(table)
        deleteSQL = PreferenceBatch.deleteSQL(table)
        self.run = run
        self.schedule = schedule
        self.observer = observer
        if !FileSystem.exists(path) {
            guard create else { throw Self.missing(path) }
            try FileSystem.createExclusive(path)
        }
        let database = try Self.naming(account, path, busy: busy) {
            try DatabaseQueue(path: path, configuration: Self.configuration(wal: create, busy: busy))
        }
        var values: [String: [String: JSONValue]] = [:]
        try Self.naming(account, path, busy: busy) {
            try database.read { db in
                guard try db.tableExists(table) else { return }
                for row in try Row.fetchAll(db, sql: "SELECT namespace, key, value FROM \(table)") {
                    let text: String = row["value"]
                    values[row["namespace"], default: [:]][row["key"]] = (try? JSONParser.parse(text)) ?? .string(text)
                }
            }
        }
        if create {
            try Self.prepareForWriting(database, table: table)
            connection = Mutex(database)
        } else {
            try database.close()
            connection = Mutex(nil)
        }
        state = Mutex(State(writer: PreferenceWriter(groupCommit: groupCommit, canGather: schedule != nil), values: values))
    }

    private static func missing(_ path: String) -> AccountdError {
        AccountdError(.storage, "\(path) does not exist; preferences are kept only in a file that exists", file: path)
    }

    /// How preference connections are configured; `wal` switches the file to WAL mode, a write.
    private static func configuration(wal: Bool, busy: Duration) -> Configuration {
        var config = Connections.configuration(foreignKeys: false, label: "preferences", busy: busy)
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
        let database = try DatabaseQueue(path: path, configuration: Self.configuration(wal: true, busy: busy))
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

    /// How many keys `namespace` holds.
    public func keyCount(_ namespace: String) -> Int {
        state.withLock { $0.values[namespace]?.count ?? 0 }
    }

    /// The UTF-8 bytes of `namespace`'s keys, together.
    public func keyBytes(_ namespace: String) -> Int {
        state.withLock { $0.values[namespace]?.keys.reduce(0) { $0 + $1.utf8.count } ?? 0 }
    }

    /// How many transactions were begun since the database was opened, committed or failed:
    /// with group commit, fewer than the changes when writers overlap.
    var transactions: Int { state.withLock { $0.writer.transactions } }

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
        guard let action = state.withLock({ $0.writer.accept(Pending(change: change, done: done)) }) else {
            done(.failure(Closed()))
            return
        }
        perform(action)
    }

    /// Carries out what the writer decided, outside the lock.
    private func perform(_ action: PreferenceWriter<Pending>.Action) {
        switch action {
        case .none: break
        case .commit: run { self.commitQueued() }
        case .gather(let timer, let delay):
            guard let schedule else { preconditionFailure("the writer gathers without a timer") }
            schedule(delay) { self.perform(self.state.withLock { $0.writer.timerFired(timer) }) }
        case .finishClose: run { self.finishClose() }
        }
    }

    /// Commits batch after batch, on the runner's thread, until the writer rests, gathers or closes.
    private func commitQueued() {
        var next = PreferenceWriter<Pending>.Action.commit
        while next == .commit {
            let batch = state.withLock { $0.writer.nextBatch() }
            let started = ContinuousClock.now
            let committed = batch.isEmpty || commit(batch)
            let took = ContinuousClock.now - started
            if !batch.isEmpty { observer?(batch.count, took, !committed) }
            next = state.withLock { $0.writer.committed(batch.count, took: took) }
        }
        if next == .finishClose { finishClose() } else { perform(next) }
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
            let failure: AccountdError =
                if let account, Self.isBusy(error) {
                    AccountdError.lockedByOtherProcess(account, path: path, waited: busy)
                } else {
                    AccountdError(
                        .storage, "saving preferences in \(path) failed: \(ErrorText.of(error)); nothing was changed", account: account?.rawValue,
                        file: path)
                }
            for pending in batch { pending.done(.failure(failure)) }
            return false
        }
        state.withLock { net.apply(to: &$0.values) }
        for (pending, existed) in zip(batch, net.answers) { pending.done(.success(existed)) }
        return true
    }

    /// Whether `error` is SQLite's `SQLITE_BUSY`: another process held the file locked past the busy timeout.
    private static func isBusy(_ error: any Error) -> Bool {
        (error as? DatabaseError)?.resultCode.primaryResultCode == .SQLITE_BUSY
    }

    /// `body`, with an account file's SQLite errors named: another process's lock is
    /// `AccountBusy`, damage inside the file `AccountCorrupt`, a full or failing disk and
    /// anything else `storage`, each naming the account.
    private static func naming<T>(_ account: AccountName?, _ path: String, busy: Duration, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError where account != nil {
            guard let account else { throw error }
            if error.resultCode.primaryResultCode == .SQLITE_BUSY { throw AccountdError.lockedByOtherProcess(account, path: path, waited: busy) }
            if let disk = ErrorText.diskProblem(error, near: path) { throw AccountdError.diskProblem(account, path: path, disk) }
            if AccountdError.isDamaged(sqliteCode: Int64(error.extendedResultCode.rawValue)) {
                throw AccountdError.damagedInside(account, path: path, sqlite: error.message ?? "\(error.resultCode)")
            }
            throw AccountdError(
                .storage, "the preferences of account \(account) in \(path) cannot be read: \(ErrorText.of(error))", account: account.rawValue,
                file: path)
        }
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

    /// Refuses new writes, and once the accepted ones are committed, closes the connection
    /// (checkpointing the WAL as far as readers allow), then returns. Holds no thread while
    /// it waits: the last commits and the close run on the runner.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            close { continuation.resume() }
        }
    }

    /// Refuses new writes, and once the accepted ones are committed and the connection is
    /// closed, calls `done` (at once when it is closed already). Never blocks: for an owner
    /// that lets a table go without waiting for it.
    public func close(then done: @escaping @Sendable () -> Void) {
        close(here: false, then: done)
    }

    /// Like ``close(then:)``, but the last commit and the close run on the calling thread,
    /// which must be one that may block on disk (a pool thread), unless a commit is running
    /// on another thread: then they run there after it. So a table that nobody is writing
    /// to is closed when this returns.
    public func closeHere(then done: @escaping @Sendable () -> Void = {}) {
        close(here: true, then: done)
    }

    private func close(here: Bool, then done: @escaping @Sendable () -> Void) {
        let action = state.withLock { state -> PreferenceWriter<Pending>.Action? in
            guard state.writer.phase != .closed else { return nil }
            state.closers.append(done)
            return state.writer.close()
        }
        switch action {
        case nil: done()
        case .commit? where here: commitQueued()
        case .finishClose? where here: finishClose()
        case let action?: perform(action)
        }
    }

    /// Closes the connection once the last batch is committed, and tells those waiting for
    /// the close; on the runner's thread.
    private func finishClose() {
        if let database = connection.withLock({ $0 }) {
            // PASSIVE: it never waits for readers. Another process reading the file (Litestream
            // holds a read transaction on every database it replicates) would make a TRUNCATE
            // checkpoint wait out the whole busy timeout, and then fail anyway.
            try? database.writeWithoutTransaction { _ = try $0.checkpoint(.passive) }
            try? database.close()
        }
        let closers = state.withLock { state in
            state.writer.closed()
            defer { state.closers.removeAll() }
            return state.closers
        }
        for closer in closers { closer() }
    }
}
