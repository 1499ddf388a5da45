import AccountdCore
import AccountdProtocol
import Logging

/// `Query` and `Execute`: an app's statements on its account's own tables.
///
/// An account's file is reached as a preference call reaches it: the active account unless
/// one is named, and only when ``AccountStore/usableState(_:)`` allows it under the
/// account's lock (missing → `AccountNotFound`, corrupt or misbound → `AccountCorrupt`,
/// too new → `AccountTooNew`, each leaving the file untouched). An outdated file is first
/// brought to the bundle's version (as `Migrate` does), so no statement ever sees an old or
/// half-migrated schema; unless an admin asks `migrate: false`, to read or fix the data of an
/// account whose migration fails (a migration is one transaction: the file is at its stored
/// version, never between two), which runs at the version the file is at.
///
/// - An `Execute` runs under the account's lock on a pool thread, in a `BEGIN IMMEDIATE`
///   transaction committed with `synchronous = FULL`, and is answered after the commit.
///   Concurrent ones on one account share that transaction (``ExecuteBatches``), each all or
///   nothing within it.
/// - A `Query` takes no lock: it reads on a read-only connection in one read transaction,
///   one WAL snapshot. A migration is one transaction, so the snapshot has the file before
///   it or after it, never between; a long read never holds up a writer or a migration.
///
/// Statements are guarded (``StatementGuard``), stopped at `limits.queryTimeoutMs` and when
/// their client goes away. Connections stay open between requests (``SQLConnectionCache``).
final class DataService: Sendable {
    /// The limits of `limits.*` that apply to statements and streamed replies.
    struct Limits: Sendable {
        /// `limits.queryTimeoutMs`.
        var timeoutMs = 5000
        /// `limits.queryMaxRows`.
        var maxRows = 10_000
        /// `limits.statementsPerUid`: how many of one uid's statements run at once (``UidShares``).
        var statementsPerUid = 8
        /// How many statements run at once in all (``UidShares/threads(poolThreads:migrations:)``); nil: no bound.
        var statementThreads: Int? = nil
        /// `limits.streamStallSeconds`: how long a streamed reply waits for its client (``ReplyStream``).
        var streamStallSeconds: Double = 30
        /// `limits.stagedExportsPerUid`: the copies `Export sqlite` stages for one uid at once (``StagedExports``).
        var stagedExportsPerUid = 2
        /// `limits.stagedExports`: the copies `Export sqlite` stages at once in all.
        var stagedExports = 8
        /// `limits.replyBytes`: the bytes of `Query` replies held for their clients at once in all (``ReplyBudget``).
        var replyBytes = 512 << 20
        /// `limits.replyBytesPerUid`: the same for one caller uid.
        var replyBytesPerUid = 128 << 20
    }

    /// How many bytes of rows one streamed `Query` reply carries at most (about).
    static let chunkBytes = 64 * 1024

    let limits: Limits
    private let stores: Reloadable<AccountStore>
    private let switching: SwitchService
    let connections: SQLConnectionCache
    let pool: BlockingPool
    private let hub: EventHub
    private let batches = ExecuteBatches()
    /// Each caller uid's share of the pool for statements.
    let shares: UidShares
    /// The bytes of `Query` replies held for clients that have not read them (``ReplyBudget``).
    let replies: ReplyBudget
    /// Whether the data root's folders or handoff records changed; nil: checked on every read.
    private let watch: DataRootWatch?

    init(limits: Limits, stores: Reloadable<AccountStore>, switching: SwitchService, connections: SQLConnectionCache, pool: BlockingPool, hub: EventHub) {
        self.limits = limits
        self.stores = stores
        self.switching = switching
        self.connections = connections
        self.pool = pool
        self.hub = hub
        shares = UidShares(perUid: limits.statementsPerUid, threads: limits.statementThreads)
        replies = ReplyBudget(total: limits.replyBytes, perUid: limits.replyBytesPerUid)
        self.watch = DataRootWatch(root: stores.current.root.path)
    }

    /// What a check by path of the handoff record and folders is remembered with: changes
    /// when a hold begins or ends, a handoff is recorded (``AccountStore/checksEpoch``), or a
    /// read drained changes to the data root's names (``DataRootWatch/generation``).
    private func checksKey(_ store: AccountStore) -> UInt64 {
        store.checksEpoch &+ (watch?.generation ?? 0)
    }

    /// The account a call acts on: the one named, or the caller's active one, which the
    /// dispatcher put in its place (``Dispatcher/need(of:peer:)``); nil when the caller has
    /// none. Never another caller's active account.
    func target(_ account: AccountName?) throws -> AccountName {
        guard let account else {
            throw ProtocolError(.noActiveAccount, "no account is active; switch to one first or give \"account\"")
        }
        return account
    }

    /// Runs `statements` in one durable transaction and tells watchers which tables changed.
    ///
    /// Concurrent `Execute`s on one account share a transaction and its sync, each all or
    /// nothing within it (``SQLConnection/execute(batch:timeout:)``); each is answered once
    /// that transaction is committed.
    ///
    /// - Throws: the decision table's refusals, `StatementNotAllowed`, `SQLError`,
    ///   `QueryTimeout`, `InvalidParameter`; ``ClientGone`` when the client left (nothing kept).
    func execute(
        _ account: AccountName?, _ statements: [SQLStatement], migrate: Bool = true, uid: UInt32, gone: @escaping @Sendable () -> Bool,
        allowed: @escaping @Sendable (AccountName) throws -> Void = { _ in }
    ) async throws -> ExecuteReply {
        let account = try target(account)
        do {
            let reply = try await executeOnce(account, statements, migrate: migrate, uid: uid, gone: gone, allowed: { try allowed(account) })
            await recordUse(account)
            return reply
        } catch {
            await recordDamage(error, account: account)
            throw error
        }
    }

    /// ``execute(_:_:migrate:uid:gone:allowed:)`` on the account it resolved.
    private func executeOnce(
        _ account: AccountName, _ statements: [SQLStatement], migrate: Bool, uid: UInt32, gone: @escaping @Sendable () -> Bool,
        allowed: @escaping @Sendable () throws -> Void
    ) async throws -> ExecuteReply {
        let work = SQLConnection.Batched(statements: statements, stop: SQLStop(gone: gone))
        guard migrate else { return try await executeAtStoredVersion(account, work, uid: uid, allowed: allowed) }
        let turn: ExecuteBatches.Turn = await withCheckedContinuation { continuation in
            let waiter = ExecuteBatches.Waiter(work: work, uid: uid, allowed: allowed) { continuation.resume(returning: $0) }
            if batches.add(waiter, for: account) { continuation.resume(returning: .lead) }
        }
        let done: SQLConnection.Executed
        switch turn {
        case .answered(let outcome): done = try outcome.get()
        case .lead: done = try await commitBatch(account).get()
        }
        if !done.tables.isEmpty { hub.publish(.watched(.data(account: account.rawValue, tables: done.tables.sorted()))) }
        return ExecuteReply(results: done.results)
    }

    /// An admin's `Execute` with `migrate: false`: alone in its transaction (never batched with
    /// apps' Executes, which expect the bundle's schema), under the account's lock, on the file
    /// at whatever usable version it is.
    private func executeAtStoredVersion(
        _ account: AccountName, _ work: SQLConnection.Batched, uid: UInt32, allowed: @escaping @Sendable () throws -> Void
    ) async throws -> ExecuteReply {
        let (connections, timeout) = (connections, Duration.milliseconds(limits.timeoutMs))
        let outcome = try await usable(account, locked: true, migrate: false, uid: uid) { store in
            try allowed()
            let connection = try connections.take(account, path: store.root.accountPath(account), readOnly: false, busy: store.options.lockTimeout)
            let outcome = connection.execute(batch: [work], timeout: timeout)[0]
            let broken = if case .failure(let error as ProtocolError) = outcome { Self.isFatal(error) } else { false }
            connections.giveBack(connection, account: account, broken: broken)
            return outcome
        }
        let done = try outcome.mapError { self.wire($0, account: account) }.get()
        if !done.tables.isEmpty { hub.publish(.watched(.data(account: account.rawValue, tables: done.tables.sorted()))) }
        return ExecuteReply(results: done.results)
    }

    /// Commits the next batch of the account's waiting `Execute`s in one transaction, in the
    /// task of the request that leads it (the first of the batch), answers the others, and
    /// hands the lead to the first `Execute` still waiting, if any; returns the leader's own
    /// outcome. No task is started for it: each batch runs in a request's own task.
    private func commitBatch(_ account: AccountName) async -> Result<SQLConnection.Executed, any Error> {
        let (connections, timeout) = (connections, Duration.milliseconds(limits.timeoutMs))
        let batch = batches.take(for: account)
        let outcomes: [Result<SQLConnection.Executed, any Error>]
        do {
            outcomes = try await usable(account, locked: true, uid: batch[0].uid) { store in
                // The grants in force now decide: one revoked while its Execute waited is refused, unrun.
                let refusals = batch.map { waiter -> (any Error)? in
                    do { try waiter.allowed() } catch { return error }
                    return nil
                }
                let runnable = zip(batch, refusals).filter { $0.1 == nil }.map(\.0.work)
                var ran: [Result<SQLConnection.Executed, any Error>] = []
                if !runnable.isEmpty {
                    let connection = try connections.take(account, path: store.root.accountPath(account), readOnly: false, busy: store.options.lockTimeout)
                    ran = connection.execute(batch: runnable, timeout: timeout)
                    let broken = ran.contains { if case .failure(let error as ProtocolError) = $0 { Self.isFatal(error) } else { false } }
                    connections.giveBack(connection, account: account, broken: broken)
                }
                var next = ran.makeIterator()
                return refusals.map { refusal in refusal.map { .failure($0) } ?? next.next()! }
            }
        } catch {
            outcomes = Array(repeating: .failure(error), count: batch.count)
        }
        let mapped = outcomes.map { $0.mapError { self.wire($0, account: account) } }
        for (waiter, outcome) in zip(batch, mapped).dropFirst() { waiter.resume(.answered(outcome)) }
        batches.handOver(for: account)?.resume(.lead)
        return mapped[0]
    }

    /// Runs `statement` and hands its rows to `sink` on a pool thread; see ``QuerySink``.
    ///
    /// - Throws: as ``execute(_:_:migrate:uid:gone:)``; ``ClientGone`` when the client left.
    /// - Parameter migrate: false (an admin's) reads an outdated file at its stored version.
    func query<Sink: QuerySink>(
        _ account: AccountName?, _ statement: SQLStatement, migrate: Bool = true, uid: UInt32, sink: Sink
    ) async throws -> Sink.Result {
        let account = try target(account)
        let (connections, timeout) = (connections, Duration.milliseconds(limits.timeoutMs))
        let stop = SQLStop(gone: sink.isGone)
        do {
            let result = try await usable(account, locked: false, migrate: migrate, uid: uid) { store in
                let connection = try connections.take(account, path: store.root.accountPath(account), readOnly: true, busy: store.options.lockTimeout)
                var broken = false
                defer { connections.giveBack(connection, account: account, broken: broken) }
                // The statement's own read transaction is its snapshot: from its first step until
                // it is reset, whatever commits meanwhile.
                do {
                    var sink = sink
                    let cursor = try connection.query(statement, deadline: .now + timeout, stop: stop)
                    return try sink.run(cursor, connection: connection)
                } catch let error as ProtocolError {
                    broken = Self.isFatal(error)
                    throw error
                }
            }
            await recordUse(account)
            return result
        } catch {
            await recordDamage(error, account: account)
            throw error
        }
    }

    /// A `Query` without `more` answered on the calling event loop, without a task or a pool
    /// thread, when it cannot make the loop wait: nil, with nothing run, when it must go to the
    /// pool (``query(_:_:sink:)``) instead.
    ///
    /// It runs only on a file found usable under this bundle already (``SQLConnectionCache/takeIdle(_:checkedUnder:path:readOnly:)``),
    /// on a read-only connection that is idle (none is opened here) and has compiled the
    /// statement before (none is compiled here), for at most ``SQLConnection/progressSteps``
    /// virtual machine steps and without waiting for a lock (``SQLConnection/queryAtOnce(_:)``).
    /// A statement that needs more is stopped, its rows dropped, and it runs again on the pool
    /// from its start, in a read transaction of its own: the client sees one snapshot either
    /// way. Besides SQLite's reads of the file's pages (from its cache or the kernel's), it
    /// costs one `lstat` (the file's identity) and one `poll` (``DataRootWatch``); the handoff
    /// record and the folders are looked at by path again only when the data root's names
    /// changed (an inotify event is pending), a hold on any account began or ended, or a
    /// handoff was recorded since they last were (``checksKey(_:)``), and always without a watch.
    func queryAtOnce(_ account: AccountName?, _ statement: SQLStatement, maxRows: Int?) -> Result<QueryReply, any Error>? {
        guard let account else { return nil }
        let store = stores.current
        let path = store.root.accountPath(account)
        let quiet = watch?.isQuiet ?? false
        if !quiet || !connections.foldersChecked(account, at: checksKey(store)) {
            if !quiet { watch?.drain() }
            let key = checksKey(store)  // read before the checks: a change during them makes it stale
            // Whether a handoff record exists, not what it says: the pool path reads it for its refusal.
            guard !store.root.isHandedOff(account) else { return nil }
            do {
                try store.root.refuseLinkedFolders(account)
            } catch {
                return nil  // the pool path refuses it, with the same error
            }
            if watch != nil { connections.noteFoldersChecked(account, at: key) }
        }
        guard let connection = connections.takeIdle(account, checkedUnder: store.targetVersion, path: path, readOnly: true) else { return nil }
        var broken = false
        // A connection closed by giving it back (broken, its account closed meanwhile, or evicted) closes on the pool, not here.
        defer { connections.giveBack(connection, account: account, broken: broken, closer: { [pool] in pool.submit($0) }) }
        do {
            guard let cursor = try connection.queryAtOnce(statement) else { return nil }
            let sink = WholeQuery(limit: min(maxRows ?? limits.maxRows, limits.maxRows), isGone: { false }, atOnceBytes: ReplyBudget.unbudgetedBytes)
            return .success(try sink.run(cursor, connection: connection))
        } catch is SQLOverBudget {
            return nil
        } catch let error as ProtocolError {
            broken = Self.isFatal(error)
            // Another process's lock is waited for, and damage recorded, on the pool path.
            if (self.wire(error, account: account) as? AccountdError) != nil { return nil }
            return .failure(self.wire(error, account: account))
        } catch {
            return .failure(self.wire(error, account: account))
        }
    }

    /// Runs `body` on a pool thread once the store finds the file usable; an outdated file is
    /// migrated first (at most twice, should the bundle change meanwhile).
    ///
    /// The job runs within `uid`'s share of the pool (``UidShares``).
    ///
    /// With `locked`, the check and `body` run holding the account (an `Execute`). Without, no
    /// lock is taken (a `Query`): a file found at the bundle's version (or a compatible newer
    /// one) has no migration to run, and the read transaction `body` begins holds one WAL
    /// snapshot, from before a restore or after it, never between.
    ///
    /// With `migrate` false, an outdated file is used as it is (never marked checked: the next
    /// call that migrates still finds it outdated).
    func usable<T: Sendable>(
        _ account: AccountName, locked: Bool, migrate: Bool = true, uid: UInt32, _ body: @escaping @Sendable (AccountStore) throws -> T
    ) async throws -> T {
        let connections = connections
        for _ in 0..<3 {
            let store = stores.current
            let hold = locked ? try await store.hold(account) : nil
            defer { hold?.release() }
            let result: T? = try await shares.run(uid) { [pool] in
                try await pool.run {
                    do {
                        // The decision table, unless this file was found usable under this bundle
                        // already and nothing replaced or migrated it since.
                        func check() throws -> Bool {
                            let path = store.root.accountPath(account)
                            if connections.isChecked(account, target: store.targetVersion, path: path) { return true }
                            guard try store.usableState(account) != .outdated else { return !migrate }
                            connections.markChecked(account, target: store.targetVersion, path: path)
                            return true
                        }
                        guard let hold else {
                            // A Query takes no lock, so it asks here what a locked call learns from the lock.
                            let key = self.checksKey(store)
                            try store.root.refuseHandedOff(account)
                            try store.root.refuseLinkedFolders(account)
                            guard try check() else { return Optional<T>.none }
                            if self.watch != nil { connections.noteFoldersChecked(account, at: key) }
                            return try body(store)
                        }
                        return try store.withAccount(account, holding: hold) { () throws -> T? in
                            try check() ? try body(store) : nil
                        }
                    } catch {
                        throw self.wire(error, account: account)
                    }
                }
            }
            if let result { return result }
            hold?.release()
            _ = try await switching.migrateOne(account)
        }
        throw AccountdError(.accountBusy, "account \(account) kept changing versions while a statement waited for it; retry", account: account.rawValue)
    }

    /// `error` as it goes to the client: ``ClientGone`` for a statement stopped because its
    /// client left, `QueryTimeout` with the limit and what to do; SQLite's `SQLITE_BUSY` (another
    /// process held the file locked past `accounts.lockTimeoutSeconds`) `AccountBusy`, and a file
    /// damaged inside (`SQLITE_CORRUPT`, `SQLITE_NOTADB`) `AccountCorrupt`, as a preference call
    /// decides, never `SQLError`.
    func wire(_ error: any Error, account: AccountName) -> any Error {
        let timeoutMs = limits.timeoutMs
        switch error {
        case is SQLStopped:
            return ClientGone()
        case let error as ProtocolError where error.name == .queryTimeout:
            return ProtocolError(
                .queryTimeout,
                "a statement on account \(account) ran longer than limits.queryTimeoutMs (\(timeoutMs) ms) and was stopped; nothing it did was kept. Narrow the statement (an index, a LIMIT) or raise the limit",
                facts: [("timeoutMs", JSONValue(timeoutMs))])
        case let error as ProtocolError where error.name == .sqlError:
            guard case .int(let code)? = error[fact: "code"] else { return error }
            let path = stores.current.root.accountPath(account)
            if AccountdError.isBusy(sqliteCode: code) {
                return AccountdError.lockedByOtherProcess(account, path: path, waited: stores.current.options.lockTimeout)
            }
            if AccountdError.isDamaged(sqliteCode: code) {
                return AccountdError.damagedInside(account, path: path, sqlite: error.message.replacingOccurrences(of: "SQLite: ", with: ""))
            }
            return error
        default:
            return error
        }
    }

    /// Records that a statement used `account`'s file: an `unavailable` or `too_new` record of
    /// it goes (``AccountFailures/fileUsed(_:on:logger:)``).
    func recordUse(_ account: AccountName) async {
        await switching.failedAccounts.fileUsed(account, on: pool, logger: switching.logger)
    }

    /// Records `error`, when it found the account's file damaged inside, as an open that found
    /// it so does: the account counts `corrupt` in `Status`, `List` and the metrics until an open
    /// of it succeeds.
    func recordDamage(_ error: any Error, account: AccountName) async {
        guard let error = error as? AccountdError, error.kind == .accountCorrupt else { return }
        await switching.failedAccounts.failed(
            account, error: error, bundle: stores.current.bundle.fingerprint, on: pool, logger: switching.logger)
    }

    /// Whether an error leaves the connection unfit for the next request (the file is not a
    /// database any more, I/O failed): it is then closed rather than kept.
    static func isFatal(_ error: ProtocolError) -> Bool {
        guard error.name == .sqlError, case .int(let code)? = error[fact: "code"] else { return false }
        let primary = code & 0xFF
        return primary == 10 || primary == 11 || primary == 26 || primary == 14  // IOERR, CORRUPT, NOTADB, CANTOPEN
    }
}
