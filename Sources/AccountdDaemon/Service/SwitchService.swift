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
        /// The active account and its version, as `state.json` has it.
        var active: AccountName?
        var version: Int?
        /// Accounts being removed: none of them may become active meanwhile.
        var removing: Set<AccountName> = []
    }

    /// What a completed switch did.
    struct Switched: Sendable {
        var outcome: OpenOutcome
        var previous: AccountName?
    }

    let stores: Reloadable<AccountStore>
    let pool: BlockingPool
    let hub: EventHub
    let preferences: PreferenceService
    let logger: Logger
    let metrics: DaemonMetrics
    let board = MigrationBoard()
    private let state = Mutex(State())
    /// `state.json`: the durable record of the active account.
    private let record: ActiveAccountRecord
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

    /// Opens the account saved in `state.json`, so the daemon is ready in SPEC's sense.
    func restoreSavedAccount() async {
        let saved: AccountName?
        do {
            saved = try record.read()
        } catch {
            logger.error("\(error)")
            return
        }
        guard let saved else { return }
        do {
            let result = try await switchTo(saved, create: false, save: false, progress: nil)
            logger.info(
                "restored active account \(saved): \(result.outcome.action.rawValue) at version \(result.outcome.version)",
                metadata: ["account": "\(saved)"])
        } catch {
            logger.error(
                "the saved active account \(saved) could not be opened, starting with no active account: \(error)",
                metadata: ["account": "\(saved)"])
        }
    }

    /// Brings `account` to the bundle's version and makes it active.
    ///
    /// A failed switch leaves the previous account active.
    func switchTo(_ account: AccountName, create: Bool, save: Bool = true, progress: ProgressHandler?) async throws -> Switched {
        let (outcome, previous) = try await open(account, create: create, progress: progress) { [self] outcome in
            try commit(account, version: outcome.version, save: save)
        }
        logSwitch(outcome)
        hub.publish(
            .watched(
                .switched(
                    .init(account: account.rawValue, previous: previous?.rawValue, action: outcome.action.rawValue, version: outcome.version))))
        return Switched(outcome: outcome, previous: previous)
    }

    /// Migrates one account without making it active.
    func migrateOne(_ account: AccountName) async throws -> OpenOutcome {
        let (outcome, _) = try await open(account, create: false, progress: nil)
        if outcome.action == .migrated { logSwitch(outcome) }
        state.withLock { if $0.active == account { $0.version = outcome.version } }
        return outcome
    }

    /// Brings `account` to the bundle's version on a pool thread, after closing its
    /// preference table, and announces each migration step.
    ///
    /// - Parameter then: more blocking work to do on the same thread once the account is ready.
    private func open<T: Sendable>(
        _ account: AccountName, create: Bool, progress: ProgressHandler?,
        then: @escaping @Sendable (OpenOutcome) throws -> T = { _ in () }
    ) async throws -> (OpenOutcome, T) {
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
            if board.steps(account) > 0 { metrics.migrationFailed() }
            throw error
        }
    }

    /// ``open(_:create:progress:then:)`` once the account is held.
    private func openHeld<T: Sendable>(
        _ account: AccountName, create: Bool, progress: ProgressHandler?, then: @escaping @Sendable (OpenOutcome) throws -> T
    ) async throws -> (OpenOutcome, T) {
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
                return (outcome, try then(outcome))
            }
        }
    }

    /// Saves `account` as the active one and makes it active; returns the account that was
    /// active before. Blocking: runs on a pool thread, one switch at a time.
    private func commit(_ account: AccountName, version: Int, save: Bool) throws -> AccountName? {
        try commits.withLock { _ in
            let (previous, removing) = state.withLock { ($0.active, $0.removing.contains(account)) }
            // A removal may have taken the file between the open and now (see beginRemoval).
            if removing || !FileManager.default.fileExists(atPath: root.accountPath(account)) {
                throw AccountdError(
                    .accountNotFound,
                    "account \(account) was removed while it was being switched to; \(previous.map { "\($0) stays active" } ?? "no account is active")",
                    account: account.rawValue)
            }
            if save && previous != account { try record.save(account) }
            state.withLock {
                $0.active = account
                $0.version = version
            }
            return previous
        }
    }

    /// Marks `account` as being removed, unless it is the active account.
    ///
    /// Together with the check in ``commit(_:version:save:)``, made under the same
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

    /// The daemon-wide status. Never waits.
    func daemonStatus() -> DaemonStatus {
        let (active, version) = state.withLock { ($0.active, $0.version) }
        let condition: String =
            if let active, board.isMigrating(active) { "migrating" } else if active != nil { "ready" } else { "idle" }
        return DaemonStatus(active: active?.rawValue, state: condition, version: version, bundleVersion: stores.current.targetVersion)
    }

    /// One account's status; never waits for a migration.
    func accountStatus(_ account: AccountName) async throws -> AccountStatus {
        let store = stores.current
        if board.isMigrating(account) {
            return AccountStatus(
                account: account, exists: true, version: nil, target: store.targetVersion, state: .migrating,
                sizeBytes: store.sizeOnDisk(account))
        }
        return try await pool.run { store.status(account) }
    }

    /// Every account's name, in order.
    func accountNames() async throws -> [AccountName] {
        let store = stores.current
        return try await pool.run { store.root.accountNames() }
    }

    /// Every account with its size, and with `details` its version and state, as `List`
    /// replies them: only those fields are kept, so that listing a fleet of 100,000 accounts
    /// holds a few megabytes for a moment, not a full status of each.
    func list(details: Bool) async throws -> [ListEntry] {
        let (store, board) = (stores.current, board)
        return try await pool.run {
            store.root.accountNames().map { account in
                guard details else { return ListEntry(account: account.rawValue, sizeBytes: store.sizeOnDisk(account)) }
                // The status has read the size already.
                var status = store.status(account)
                if board.isMigrating(account) { status.state = .migrating }
                return ListEntry(
                    account: account.rawValue, sizeBytes: status.sizeBytes,
                    details: ListEntry.Details(version: status.version, state: status.state.rawValue))
            }
        }
    }

    /// The watchdog's store read (``LivenessCheck``): reads `state.json` under the data root
    /// and the daemon's shared state.
    ///
    /// Cheap, and it touches no account file, takes no account lock and needs no pool thread,
    /// so neither a long migration nor a busy client holds it up; a data root that no longer
    /// answers, or shared state that stays locked, does.
    func livenessRead() {
        _ = try? record.read()
        _ = daemonStatus()
    }
}
