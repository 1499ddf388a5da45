import AccountdCore
import AccountdProtocol
import Foundation
import Logging
import Synchronization

/// The active accounts, one per caller's uid, and switching to another: `Switch`,
/// `Migrate`, `Status`, `List`.
///
/// Each uid that switched has its own active account (SPEC section 12, "The active
/// account is the caller's"): a call without `account` acts on the caller's, never on
/// another uid's. Its mutable state is one value behind a lock (``State``), held only to read or set a
/// few fields, so `Status` never waits. The work on files runs on ``BlockingPool``
/// threads, so while one account migrates, everything else goes on. The one thing that
/// must happen in order, saving the active account to `state.json` and making it active,
/// happens behind ``commits``, one switch at a time; `state.json` keeps every uid's entry.
final class SwitchService: Sendable {
    let stores: Reloadable<AccountStore>
    let pool: BlockingPool
    let hub: EventHub
    let preferences: PreferenceService
    let logger: Logger
    let metrics: DaemonMetrics
    /// Asked before an account is created, so that no new empty file shadows the replica's copy.
    let replication: ReplicationService
    let board = MigrationBoard()
    /// The accounts whose last open failed, for the metrics, `Status` and `List`; kept in `failures.json`.
    let failedAccounts: AccountFailures
    let state = Mutex(State())
    /// `state.json`: the durable record of every uid's active account.
    let record: ActiveAccountRecord
    /// The daemon's own uid: an older `state.json`'s one active account is its entry.
    let ownUID: UInt32
    /// Passed one at a time by a switch saving `state.json` and setting the active account
    /// (the save on a pool thread), a removal's check, and a purge's erasure of its name, so
    /// the file always names the account that is active. A task waits there without a thread.
    let commits = SerialGate()
    /// The active accounts a call found its uid may no longer read, cleared in memory there
    /// and saved to `state.json` by ``ClearedAccountSaver``, a service of the daemon.
    let clearedSaves = AsyncStream.makeStream(of: ClearedActive.self)

    init(
        stores: Reloadable<AccountStore>, preferences: PreferenceService, pool: BlockingPool, hub: EventHub, metrics: DaemonMetrics,
        replication: ReplicationService? = nil, logger: Logger
    ) {
        self.replication = replication ?? .off(root: stores.current.root, logger: logger)
        self.stores = stores
        self.metrics = metrics
        self.preferences = preferences
        self.pool = pool
        self.hub = hub
        self.logger = logger
        ownUID = getuid()
        record = ActiveAccountRecord(path: stores.current.root.statePath, owner: ownUID)
        failedAccounts = AccountFailures(record: FailureRecord(root: stores.current.root), logger: logger)
    }

    var root: DataRoot { stores.current.root }

    /// The account systemd's `STATUS=` line and the metrics describe: the active account of
    /// the uid that switched last, else the daemon's own uid's.
    var active: AccountName? {
        state.withLock { state in state.lastUID.flatMap { state.active[$0] } ?? state.active[ownUID] }
    }

    /// `uid`'s active account: where its calls without `account` go.
    func active(for uid: UInt32) -> AccountName? { state.withLock { $0.active[uid] } }

    /// Every account that is active for some uid.
    var activeAccounts: Set<AccountName> { state.withLock { Set($0.active.values) } }

    /// Whether `account` is the active account of some uid.
    func isActive(_ account: AccountName) -> Bool { state.withLock { $0.active.values.contains(account) } }

    /// Brings `account` to the bundle's version and makes it `uid`'s active account; with
    /// `save: false`, opens an active account again (``Commit/refresh``).
    ///
    /// A failed switch leaves the previous account active.
    func switchTo(_ account: AccountName, create: Bool, save: Bool = true, uid: UInt32, progress: ProgressHandler?) async throws -> Switched {
        try await switchTo(account, create: create, commit: save ? .select(save: true, uid: uid) : .refresh, progress: progress)
    }

    /// Brings `account` to the bundle's version and makes it active as `commit` allows.
    ///
    /// When a reload replaced the bundle while the account was being opened, the account
    /// is opened again under the new one before this returns, so the account a switch
    /// makes active is never left below the bundle in force without a word: if that second
    /// open fails, the account stays active at the version the first reached, and `Status`
    /// says `failed` with the error.
    /// When a reload withdrew the bundle the open ran under (its migration stopped and rolled
    /// back), the account is opened under the bundle now in force instead.
    func switchTo(_ account: AccountName, create: Bool, commit mode: Commit, progress: ProgressHandler?) async throws -> Switched {
        let (opened, committed, store): (OpenOutcome, (previous: AccountName?, made: Bool), AccountStore)
        do {
            (opened, committed, store) = try await open(
                account, create: create, progress: progress,
                // On the thread that opened it, when no other switch is committing: no second trip to the pool.
                atOnce: { [self] outcome in try commits.runIfFree { try commitInTurn(account, version: outcome.version, mode: mode) } },
                then: { [self] outcome in try await commit(account, version: outcome.version, mode: mode) })
        } catch let failure as AccountdError where failure.kind == .withdrawn && !stores.current.isWithdrawn {
            logger.notice("\(failure.message); opening it under bundle version \(stores.current.targetVersion) now", metadata: ["account": "\(account)"])
            return try await switchTo(account, create: create, commit: mode, progress: progress)
        }
        guard committed.made else { return Switched(outcome: opened, previous: committed.previous, committed: false) }
        // A reopen after a Query or Execute migrated the account reports that migration.
        var outcome = opened
        if let migrated = state.withLock({ $0.migratedInUse.removeValue(forKey: account) }), case .refresh = mode, outcome.action == .opened,
            migrated.to == outcome.version
        {
            outcome.action = .migrated
            outcome.fromVersion = migrated.from
        }
        let switched = Switched(outcome: outcome, previous: committed.previous, committed: true)
        // The migration itself was logged when it ran.
        logSwitch(opened)
        hub.publish(
            .watched(
                .switched(
                    .init(
                        account: account.rawValue, previous: committed.previous?.rawValue, action: outcome.action.rawValue,
                        version: outcome.version))))
        // A reload that replaced the store after this open began found the previous active
        // account, or this one before it was committed: bring this one to the new bundle now.
        // (The reload replaces the store, then reads the active account; this commits, then
        // reads the store: one of the two sees the other.)
        let now = stores.current
        guard now !== store else { return switched }
        logger.notice(
            "account \(account) was opened under bundle version \(store.targetVersion) while a reload brought version \(now.targetVersion); opening it again under the new bundle",
            metadata: ["account": "\(account)"])
        let again: Switched
        do {
            again = try await switchTo(account, create: false, commit: .refresh, progress: progress)
        } catch {
            // The account is active (committed above) at the version it reached; `Status`
            // says `failed` with this error (noteFailure), as after a failed reload.
            logger.error(
                "account \(account) is active at version \(outcome.version) but could not be brought to the reloaded bundle's \(now.targetVersion): \(error)",
                metadata: ["account": "\(account)", "operation": "Switch", "error": "\((error as? AccountdError)?.wireName.rawValue ?? "\(error)")"])
            return switched
        }
        // One switch, reported whole: what the first open did, and the version it ends at.
        var latest = again.outcome
        if outcome.action != .opened {
            latest.action = outcome.action
            latest.fromVersion = outcome.fromVersion
        }
        latest.durationMs += outcome.durationMs
        return Switched(outcome: latest, previous: committed.previous, committed: again.committed)
    }

    /// Migrates one account without making it active; with `create`, creates it when missing.
    func migrateOne(_ account: AccountName, create: Bool = false) async throws -> OpenOutcome {
        // Noted while the account is still held, so a reopen waiting for it sees the migration.
        let (outcome, _, _) = try await open(account, create: create, progress: nil) { [self] (outcome: OpenOutcome) -> Void in
            guard outcome.action == .migrated, let from = outcome.fromVersion else { return }
            state.withLock {
                if !$0.uids(of: account).isEmpty { $0.migratedInUse[account] = (from: $0.migratedInUse[account]?.from ?? from, to: outcome.version) }
            }
        }
        if outcome.action != .opened { logSwitch(outcome) }
        state.withLock {
            let uids = $0.uids(of: account)
            guard !uids.isEmpty else { return }
            $0.versions[account] = outcome.version
            for uid in uids { $0.failures[uid] = nil }
        }
        return outcome
    }

    /// Brings `account` to the bundle's version on a pool thread, after closing its
    /// preference table, and announces each migration step.
    ///
    /// - Parameters:
    ///   - atOnce: more work to do once the account is ready, on the pool thread that opened
    ///     it, if it can be done without waiting; nil when it cannot.
    ///   - then: that work when `atOnce` could not do it, while the account is still held.
    /// - Returns: the outcome, what `atOnce` or `then` returned, and the store the account was opened under.
    private func open<T: Sendable>(
        _ account: AccountName, create: Bool, progress: ProgressHandler?,
        atOnce: @escaping @Sendable (OpenOutcome) throws -> T? = { _ in nil },
        then: @escaping @Sendable (OpenOutcome) async throws -> T
    ) async throws -> (OpenOutcome, T, AccountStore) {
        // Stopping: a fleet's Migrate in progress begins no further account.
        if SQLiteInterrupt.isStopping {
            throw AccountdError(
                .interrupted, "the daemon is stopping; account \(account) was not opened and is as it was; try again once it runs",
                account: account.rawValue)
        }
        board.begin(account)
        defer {
            board.end(account)
            hub.publish(.openEnded(account))
        }
        do {
            let result = try await openHeld(account, create: create, progress: progress, atOnce: atOnce, then: then)
            await failedAccounts.succeeded(account, on: pool, logger: logger)
            if result.0.action == .migrated { metrics.migrated(steps: board.steps(account), milliseconds: result.0.migrationMs) }
            if result.0.snapshot != nil { metrics.snapshot(.migrate) }
            return result
        } catch var failure as AccountdError where failure.kind == .interrupted || failure.kind == .withdrawn {
            // Stopped by the shutdown, or by a reload that withdrew the bundle; rolled back: not the account's failure.
            if failure.account == nil { failure.account = account.rawValue }
            throw failure
        } catch {
            let migrationRan = board.steps(account) > 0
            var failure = error as? AccountdError
            // Every failure's log line names the account (journalctl ACCOUNT=...), also one
            // before the first migration step (a snapshot that could not be taken).
            if failure != nil, failure?.account == nil { failure?.account = account.rawValue }
            let reported: any Error = if let failure { failure } else { error }
            let name = failure?.wireName.shortName ?? ErrorName.internalError.shortName
            if migrationRan {
                metrics.migrationFailed(error: name)
                // Its before-migrate snapshot was taken (or kept from the last attempt), and stays.
                metrics.snapshot(.migrate)
            }
            // The account's own failures, not a busy lock or a missing file.
            let accountFailures: Set<AccountdError.Kind> = [.migrationFailed, .accountCorrupt, .accountTooNew, .storage]
            // A create that failed left no file: nothing to count, and nothing to hold against a
            // file that comes later under that name (hostile34d F2); the reply said why.
            let path = root.accountPath(account)
            let fileExists = (try? await pool.run { access(path, F_OK) == 0 }) ?? true
            if fileExists, migrationRan || failure.map({ accountFailures.contains($0.kind) }) ?? true {
                await failedAccounts.failed(account, error: reported, bundle: stores.current.bundle.fingerprint, on: pool, logger: logger)
            }
            noteFailure(account, reported, migrationRan: migrationRan)
            throw reported
        }
    }

    /// ``open(_:create:progress:atOnce:then:)`` once the account is held.
    private func openHeld<T: Sendable>(
        _ account: AccountName, create: Bool, progress: ProgressHandler?, atOnce: @escaping @Sendable (OpenOutcome) throws -> T?,
        then: @escaping @Sendable (OpenOutcome) async throws -> T
    ) async throws -> (OpenOutcome, T, AccountStore) {
        let (store, board, hub, preferences, replication, logger) = (stores.current, board, hub, preferences, replication, logger)
        // The account is waited for here, in the task, so that waiters hold no pool thread.
        return try await store.withHold(account) { hold in
            await preferences.close(account)
            // The replica is asked (and may be pulled from) before a new file is made: Litestream
            // awaited under the hold, the file work on the pool.
            if create { try await replication.beforeCreating(account, store: store, holding: hold, on: pool) }
            let (outcome, done) = try await pool.run {
                let outcome = try store.open(account, create: create, holding: hold) { step in
                    board.stepStarted(account, of: step.of)
                    // A migration that runs long is named in the log while it runs, not only at its end.
                    if step.step == 1 {
                        logger.notice(
                            "account \(account): migrating to version \(store.targetVersion) (\(step.of) step(s), the first \(step.name))",
                            metadata: ["account": "\(account)"])
                    }
                    hub.publish(
                        .watched(
                            .migration(.init(account: account.rawValue, step: step.step, of: step.of, name: step.name, version: step.version))))
                    progress?(step)
                }
                return (outcome, try atOnce(outcome))
            }
            if let done { return (outcome, done, store) }
            return (outcome, try await then(outcome), store)
        }
    }

    /// Makes `account` active as `mode` allows, saving it in `state.json` for a ``Commit/select(save:uid:)``;
    /// returns the account that was active before (for the uid switching, or `account`
    /// itself for a refresh), and whether `account` is active now by this commit. One switch
    /// at a time; the save on a pool thread.
    private func commit(_ account: AccountName, version: Int, mode: Commit) async throws -> (previous: AccountName?, made: Bool) {
        try await commits.run { [self] in
            try await pool.run { try self.commitInTurn(account, version: version, mode: mode) }
        }
    }

    /// ``commit(_:version:mode:)`` once its turn has come. Blocking: on a pool thread.
    private func commitInTurn(_ account: AccountName, version: Int, mode: Commit) throws -> (previous: AccountName?, made: Bool) {
        let (all, removing) = state.withLock { ($0.active, $0.removing.contains(account)) }
        let uid: UInt32?
        let previous: AccountName?
        switch mode {
        case .select(_, let caller), .startup(let caller):
            uid = caller
            previous = all[caller]
            if case .startup = mode, previous != nil { return (previous, false) }
        case .refresh:
            uid = nil
            previous = all.values.contains(account) ? account : nil
            if previous == nil { return (nil, false) }
        }
        // A removal may have taken the file between the open and now (see beginRemoval).
        if removing || !FileManager.default.fileExists(atPath: root.accountPath(account)) {
            throw AccountdError(
                .accountNotFound,
                "account \(account) was removed while it was being switched to; \(previous.map { "\($0) stays active" } ?? "no account is active")",
                account: account.rawValue)
        }
        if case .select(save: true, let caller) = mode, previous != account {
            var saved = all
            saved[caller] = account
            try record.save(saved)
        }
        state.withLock {
            if let uid {
                $0.active[uid] = account
                $0.opening[uid] = nil
                $0.lastUID = uid
                // Who switched is noted by the dispatcher (``noteSwitcher(_:of:)``).
                if previous != account { $0.switchers[uid] = nil }
            }
            $0.versions[account] = version
            // The account opened: whoever has it active has no failure of it to report.
            for holder in $0.uids(of: account) { $0.failures[holder] = nil }
            // Versions only of accounts that are active for some uid.
            let inUse = Set($0.active.values)
            $0.versions = $0.versions.filter { inUse.contains($0.key) }
            $0.migratedInUse = $0.migratedInUse.filter { inUse.contains($0.key) }
        }
        return (previous, true)
    }

    private func logSwitch(_ outcome: OpenOutcome) {
        var metadata: Logger.Metadata = ["account": "\(outcome.account)"]
        switch outcome.action {
        case .migrated:
            metadata["migration_from"] = "\(outcome.fromVersion ?? 0)"
            metadata["migration_to"] = "\(outcome.version)"
            // Where the time went: the snapshot, the migration's transaction, and the rest
            // (reading the file's facts, on-open.sql, bookkeeping).
            let (snapshot, transaction) = (outcome.snapshotMs ?? 0, outcome.migrationMs ?? 0)
            metadata["snapshot_ms"] = "\(Self.tenths(snapshot))"
            metadata["transaction_ms"] = "\(Self.tenths(transaction))"
            logger.notice(
                "account \(outcome.account) migrated from version \(outcome.fromVersion ?? 0) to \(outcome.version) in \(Self.tenths(outcome.durationMs)) ms (snapshot \(Self.tenths(snapshot)) ms, transaction \(Self.tenths(transaction)) ms, the rest \(Self.tenths(outcome.durationMs - snapshot - transaction)) ms)",
                metadata: metadata)
        case .created:
            logger.notice("account \(outcome.account) created at version \(outcome.version)", metadata: metadata)
        case .opened:
            logger.info("switched to account \(outcome.account) at version \(outcome.version)", metadata: metadata)
        }
        for edited in outcome.editedMigrations {
            logger.warning(
                "account \(outcome.account): migration \(edited.name) changed since it was applied (sha256 \(edited.appliedSHA256.prefix(12)) then, \(edited.bundleSHA256.prefix(12)) now); shipped migrations must not be edited",
                metadata: metadata)
        }
    }

    /// Milliseconds to one decimal, for the log.
    private static func tenths(_ milliseconds: Double) -> Double { (milliseconds * 10).rounded() / 10 }
}
