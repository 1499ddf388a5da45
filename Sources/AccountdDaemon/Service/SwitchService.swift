import AccountdCore
import AccountdProtocol
import Foundation
import Logging
import Synchronization

/// The active account, and switching to another: `Switch`, `Migrate`, `Status`, `List`.
///
/// Its mutable state is one value behind a lock (``State``), held only to read or set a
/// few fields, so `Status` never waits. The work on files runs on ``BlockingPool``
/// threads, so while one account migrates, everything else goes on. The one thing that
/// must happen in order, saving the active account to `state.json` and making it active,
/// happens under ``commits``, one switch at a time.
final class SwitchService: Sendable {
    /// The mutable state.
    struct State: Sendable {
        /// The active account and its version, as `state.json` and its file have them.
        var active: AccountName?
        var version: Int?
        /// Accounts being removed: none of them may become active meanwhile.
        var removing: Set<AccountName> = []
        /// Why the active account could not be brought to the bundle, until an open of it
        /// succeeds or another account becomes active; with no active account, why the saved
        /// one could not be opened at start-up (`Status` then says `idle`, with the reason).
        var failure: Failure?
        /// At start-up, while the saved active account is not open yet.
        var opening: Opening?
    }

    /// A failed attempt to bring an account to the bundle, as `Status` reports it.
    struct Failure: Sendable {
        var account: AccountName
        var message: String
        /// The file is newer than the bundle and not readable by it.
        var tooNew: Bool
    }

    /// The saved active account, while start-up has not opened it yet.
    struct Opening: Sendable {
        var account: AccountName
        /// Why the last attempt did not open it; nil during the first.
        var problem: String?
    }

    /// Which account a switch's commit may make active.
    enum Commit: Sendable {
        /// A `Switch`: the account becomes active; with `save`, `state.json` names it.
        case select(save: Bool)
        /// Opening the active account again (a reload, a restore, a reload during a switch):
        /// it is kept active only if it still is, so a switch to another account made
        /// meanwhile stands.
        case refresh
        /// The saved account at start-up: made active only while no account is.
        case startup
    }

    /// What a completed switch did.
    struct Switched: Sendable {
        var outcome: OpenOutcome
        var previous: AccountName?
        /// False when the commit's condition (``Commit``) no longer held: the account was
        /// opened but did not become, or stay, the active one.
        var committed: Bool = true
    }

    let stores: Reloadable<AccountStore>
    let pool: BlockingPool
    let hub: EventHub
    let preferences: PreferenceService
    let logger: Logger
    let metrics: DaemonMetrics
    let board = MigrationBoard()
    let state = Mutex(State())
    /// `state.json`: the durable record of the active account.
    let record: ActiveAccountRecord
    /// Held while a switch saves `state.json` and sets the active account (on a pool
    /// thread, never on an event loop), so the file always names the account that is active.
    private let commits = Mutex(())

    init(
        stores: Reloadable<AccountStore>, preferences: PreferenceService, pool: BlockingPool, hub: EventHub, metrics: DaemonMetrics,
        logger: Logger
    ) {
        self.stores = stores
        self.metrics = metrics
        self.preferences = preferences
        self.pool = pool
        self.hub = hub
        self.logger = logger
        record = ActiveAccountRecord(path: stores.current.root.statePath)
    }

    var root: DataRoot { stores.current.root }
    var active: AccountName? { state.withLock { $0.active } }

    /// Brings `account` to the bundle's version and makes it active; with `save: false`,
    /// opens the active account again (``Commit/refresh``).
    ///
    /// A failed switch leaves the previous account active.
    func switchTo(_ account: AccountName, create: Bool, save: Bool = true, progress: ProgressHandler?) async throws -> Switched {
        try await switchTo(account, create: create, commit: save ? .select(save: true) : .refresh, progress: progress)
    }

    /// Brings `account` to the bundle's version and makes it active as `commit` allows.
    ///
    /// When a reload replaced the bundle while the account was being opened, the account
    /// is opened again under the new one before this returns, so the account a switch
    /// makes active is never left below the bundle in force without a word: if that second
    /// open fails, the account stays active at the version the first reached, and `Status`
    /// says `failed` with the error.
    func switchTo(_ account: AccountName, create: Bool, commit mode: Commit, progress: ProgressHandler?) async throws -> Switched {
        let (outcome, committed, store) = try await open(account, create: create, progress: progress) { [self] outcome in
            try commit(account, version: outcome.version, mode: mode)
        }
        let switched = Switched(outcome: outcome, previous: committed.previous, committed: committed.made)
        guard committed.made else { return switched }
        logSwitch(outcome)
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

    /// Migrates one account without making it active.
    func migrateOne(_ account: AccountName) async throws -> OpenOutcome {
        let (outcome, _, _) = try await open(account, create: false, progress: nil)
        if outcome.action == .migrated { logSwitch(outcome) }
        state.withLock {
            guard $0.active == account else { return }
            $0.version = outcome.version
            $0.failure = nil
        }
        return outcome
    }

    /// Brings `account` to the bundle's version on a pool thread, after closing its
    /// preference table, and announces each migration step.
    ///
    /// - Parameter then: more blocking work to do on the same thread once the account is ready.
    /// - Returns: the outcome, what `then` returned, and the store the account was opened under.
    private func open<T: Sendable>(
        _ account: AccountName, create: Bool, progress: ProgressHandler?,
        then: @escaping @Sendable (OpenOutcome) throws -> T = { _ in () }
    ) async throws -> (OpenOutcome, T, AccountStore) {
        board.begin(account)
        defer {
            board.end(account)
            hub.publish(.openEnded(account))
        }
        do {
            let result = try await openHeld(account, create: create, progress: progress, then: then)
            if result.0.action == .migrated { metrics.migrated(steps: board.steps(account), milliseconds: result.0.migrationMs) }
            if result.0.snapshot != nil { metrics.snapshot(.migrate) }
            return result
        } catch {
            let migrationRan = board.steps(account) > 0
            if migrationRan { metrics.migrationFailed() }
            noteFailure(account, error, migrationRan: migrationRan)
            throw error
        }
    }

    /// ``open(_:create:progress:then:)`` once the account is held.
    private func openHeld<T: Sendable>(
        _ account: AccountName, create: Bool, progress: ProgressHandler?, then: @escaping @Sendable (OpenOutcome) throws -> T
    ) async throws -> (OpenOutcome, T, AccountStore) {
        let (store, board, hub, preferences) = (stores.current, board, hub, preferences)
        // The account is waited for here, in the task, so that waiters hold no pool thread.
        return try await store.withHold(account) { hold in
            try await pool.run {
                preferences.close(account)
                let outcome = try store.open(account, create: create, holding: hold) { step in
                    board.stepStarted(account, of: step.of)
                    hub.publish(
                        .watched(
                            .migration(.init(account: account.rawValue, step: step.step, of: step.of, name: step.name, version: step.version))))
                    progress?(step)
                }
                return (outcome, try then(outcome), store)
            }
        }
    }

    /// Makes `account` active as `mode` allows, saving it in `state.json` for a ``Commit/select(save:)``;
    /// returns the account that was active before, and whether `account` is active now by
    /// this commit. Blocking: runs on a pool thread, one switch at a time.
    private func commit(_ account: AccountName, version: Int, mode: Commit) throws -> (previous: AccountName?, made: Bool) {
        try commits.withLock { _ in
            let (previous, removing) = state.withLock { ($0.active, $0.removing.contains(account)) }
            switch mode {
            case .refresh where previous != account, .startup where previous != nil: return (previous, false)
            case .select, .refresh, .startup: break
            }
            // A removal may have taken the file between the open and now (see beginRemoval).
            if removing || !FileManager.default.fileExists(atPath: root.accountPath(account)) {
                throw AccountdError(
                    .accountNotFound,
                    "account \(account) was removed while it was being switched to; \(previous.map { "\($0) stays active" } ?? "no account is active")",
                    account: account.rawValue)
            }
            if case .select(save: true) = mode, previous != account { try record.save(account) }
            state.withLock {
                $0.active = account
                $0.version = version
                $0.failure = nil
                $0.opening = nil
            }
            return (previous, true)
        }
    }

    /// Marks `account` as being removed, unless it is the active account.
    ///
    /// Together with the check in ``commit(_:version:mode:)``, made under the same
    /// ``commits`` lock, this decides every race between a removal and a switch to the
    /// same account: either the switch committed first and the removal is refused with
    /// `AccountActive`, or the removal marked the account first and the switch fails with
    /// `AccountNotFound`, leaving the previous account active.
    ///
    /// - Throws: `AccountActive` when `account` is the active account.
    func beginRemoval(_ account: AccountName) throws {
        try commits.withLock { _ in
            try state.withLock { state in
                if state.active == account {
                    throw AccountdError(
                        .accountActive,
                        "account \(account) is the active account and cannot be removed; switch to another account first "
                            + "('accountctl switch OTHER'), then remove it. The file was left untouched",
                        account: account.rawValue, file: root.accountPath(account))
                }
                state.removing.insert(account)
            }
        }
    }

    /// Ends what ``beginRemoval(_:)`` began, whether the removal succeeded or not.
    func endRemoval(_ account: AccountName) {
        _ = state.withLock { $0.removing.remove(account) }
    }

    /// Erases a purged account's name from `state.json` (its older slot may name it).
    /// Blocking: call it on a pool thread.
    ///
    /// - Throws: `storage`, saying the purge itself is done, when the file cannot be written.
    func forgetPurged(_ account: AccountName) throws {
        do {
            try record.forget(account)
        } catch {
            throw AccountdError(
                .storage,
                "account \(account) was purged, but erasing its name from \(root.statePath) failed: \(error); "
                    + "switch once (any account) to rewrite the file",
                account: account.rawValue, file: root.statePath)
        }
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
