import AccountdCore
import AccountdProtocol
import Foundation
import Logging
import Synchronization

/// The daemon's shared state: the store, the active account and who is migrating.
///
/// Every connection shares it. Its mutable state is one value behind a lock
/// (``State``), so reading it (`Status`, `Info`) never waits; blocking work runs on
/// ``BlockingPool`` threads, so while one account migrates, everything else goes on.
/// The one thing that must happen in order, saving the active account to
/// `state.json` and making it active, happens on one serial queue.
final class AccountService: Sendable {
    /// Where the daemon is in its life.
    enum Phase: Sendable {
        case starting, serving, stopping
    }

    /// The mutable state.
    struct State: Sendable {
        var phase = Phase.starting
        var store: AccountStore
        /// The active account and its version, as `state.json` has it.
        var active: AccountName?
        var version: Int?
        /// Accounts being removed: none of them may become active meanwhile.
        var removing: Set<AccountName> = []
    }

    /// What a completed switch did.
    struct SwitchResult: Sendable {
        var outcome: OpenOutcome
        var previous: AccountName?
    }

    let root: DataRoot
    let pool: BlockingPool
    let hub: EventHub
    let board = MigrationBoard()
    let logger: Logger
    let preferences: PreferenceService
    let startedAt = Date()
    private let state: Mutex<State>
    /// Saving `state.json` and setting the active account happen here, one switch at a
    /// time, so the file always names the account that is active.
    private let stateQueue = DispatchQueue(label: "accountd.state")

    init(store: AccountStore, preferences: PreferenceService, pool: BlockingPool, hub: EventHub, logger: Logger) {
        self.root = store.root
        self.state = Mutex(State(store: store))
        self.preferences = preferences
        self.pool = pool
        self.hub = hub
        self.logger = logger
    }

    var store: AccountStore { state.withLock { $0.store } }
    var bundle: SchemaBundle { store.bundle }
    var active: AccountName? { state.withLock { $0.active } }
    var phase: Phase { state.withLock { $0.phase } }

    func setPhase(_ phase: Phase) { state.withLock { $0.phase = phase } }

    /// Serves a new bundle (a reload): the next switch uses it.
    func replaceStore(_ store: AccountStore) { state.withLock { $0.store = store } }

    /// What systemd's STATUS= should say now.
    var statusLine: String {
        active.map { "serving; active account \($0)" } ?? "serving; no active account"
    }

    /// Opens the account saved in `state.json`, so the daemon is ready in SPEC's sense.
    func restoreSavedAccount() async {
        let saved: AccountName?
        do {
            saved = try root.savedActiveAccount()
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

    /// Saves `account` as the active one and makes it active; returns the account that was
    /// active before. Blocking: runs on a pool thread, one switch at a time, so
    /// `state.json` always names the account that is active.
    private func commit(_ account: AccountName, version: Int, save: Bool) throws -> AccountName? {
        try stateQueue.sync {
            let previous = state.withLock { $0.active }
            // A removal may have taken the file between the open and now (see beginRemoval).
            if state.withLock({ $0.removing.contains(account) }) || !FileManager.default.fileExists(atPath: root.accountPath(account)) {
                throw AccountdError(
                    .accountNotFound, "account \(account) was removed while it was being switched to; \(previous.map { "\($0) stays active" } ?? "no account is active")",
                    account: account.rawValue)
            }
            if save && previous != account { try root.saveActiveAccount(account) }
            state.withLock {
                $0.active = account
                $0.version = version
            }
            return previous
        }
    }

    /// Marks `account` as being removed, unless it is the active account.
    ///
    /// Together with the check in ``commit(_:version:save:)``, which runs on the same
    /// serial queue, this decides every race between a removal and a switch to the same
    /// account: either the switch committed first and the removal is refused with
    /// `AccountActive`, or the removal marked the account first and the switch fails with
    /// `AccountNotFound`, leaving the previous account active.
    ///
    /// - Throws: `AccountActive` when `account` is the active account.
    func beginRemoval(_ account: AccountName) throws {
        try stateQueue.sync {
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

    /// Brings `account` to the bundle's version on a pool thread, after closing its
    /// preference table, and announces each migration step (Status, Watch, systemd).
    ///
    /// - Parameter then: more blocking work to do on the same thread once the account is ready.
    private func open<T: Sendable>(
        _ account: AccountName, create: Bool, progress: ProgressHandler?,
        then: @escaping @Sendable (OpenOutcome) throws -> T = { _ in () }
    ) async throws -> (OpenOutcome, T) {
        let store = store
        let board = board
        let hub = hub
        let preferences = preferences
        board.begin(account)
        defer { board.end(account) }
        return try await pool.run {
            preferences.close(account)
            let outcome = try store.open(account, create: create) { step in
                board.stepStarted(account)
                SystemdNotifier.status("migrating \(account) \(step.step)/\(step.of)")
                // A migration at start-up may be long: ask systemd for more time, a step at a time.
                SystemdNotifier.notify("EXTEND_TIMEOUT_USEC=120000000")
                hub.publish([
                    "event": "migration", "account": .string(account.rawValue), "step": JSONValue(step.step),
                    "of": JSONValue(step.of), "name": .string(step.name), "version": JSONValue(step.version),
                ])
                progress?(step)
            }
            return (outcome, try then(outcome))
        }
    }

    /// Brings `account` to the bundle's version and makes it active.
    ///
    /// A failed switch leaves the previous account active.
    func switchTo(
        _ account: AccountName, create: Bool, save: Bool = true, progress: ProgressHandler?
    ) async throws -> SwitchResult {
        let (outcome, previous) = try await open(account, create: create, progress: progress) { [self] outcome in
            try commit(account, version: outcome.version, save: save)
        }
        logSwitch(outcome)
        if phase == .serving { SystemdNotifier.status(statusLine) }
        hub.publish([
            "event": "switched", "account": .string(account.rawValue), "previous": JSONValue(previous?.rawValue),
            "action": .string(outcome.action.rawValue), "version": JSONValue(outcome.version),
        ])
        return SwitchResult(outcome: outcome, previous: previous)
    }

    private func logSwitch(_ outcome: OpenOutcome) {
        var metadata: Logger.Metadata = ["account": "\(outcome.account)"]
        switch outcome.action {
        case .migrated:
            metadata["migration_from"] = "\(outcome.fromVersion ?? 0)"
            metadata["migration_to"] = "\(outcome.version)"
            logger.notice(
                "account \(outcome.account) migrated from version \(outcome.fromVersion ?? 0) to \(outcome.version) in \(Int(outcome.durationMs)) ms",
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

    /// The daemon-wide status. Never waits.
    func daemonStatus() -> JSONValue {
        let (active, version, target) = state.withLock { ($0.active, $0.version, $0.store.bundle.targetVersion) }
        let condition: String =
            if let active, board.isMigrating(active) { "migrating" } else if active != nil { "ready" } else { "idle" }
        return [
            "active": JSONValue(active?.rawValue), "state": .string(condition),
            "version": version.map { JSONValue($0) } ?? .null, "bundleVersion": JSONValue(target),
        ]
    }

    /// One account's status; never waits for a migration.
    func accountStatus(_ account: AccountName) async throws -> AccountStatus {
        if board.isMigrating(account) {
            var status = AccountStatus(
                account: account, exists: true, version: nil, target: bundle.targetVersion, state: .migrating, sizeBytes: 0,
                createdAt: nil, lastMigration: nil, editedMigrations: [], problem: nil)
            status.sizeBytes = FileSize.of(root.accountPath(account))
            return status
        }
        let store = store
        return try await pool.run { store.status(account) }
    }

    /// Every account with its size, and with `details` its version and state.
    func list(details: Bool) async throws -> [(AccountName, Int64, AccountStatus?)] {
        let store = store
        let board = board
        return try await pool.run {
            store.root.accountNames().map { account in
                let size = FileSize.of(store.root.accountPath(account))
                guard details else { return (account, size, nil) }
                var status = store.status(account)
                if board.isMigrating(account) { status.state = .migrating }
                return (account, size, status)
            }
        }
    }

    /// Migrates one account without making it active.
    func migrateOne(_ account: AccountName) async throws -> OpenOutcome {
        let (outcome, _) = try await open(account, create: false, progress: nil)
        if outcome.action == .migrated { logSwitch(outcome) }
        state.withLock { if $0.active == account { $0.version = outcome.version } }
        if phase == .serving { SystemdNotifier.status(statusLine) }
        return outcome
    }

    func verify(_ account: AccountName) async throws -> VerifyReport {
        let store = store
        return try await pool.run { try store.verify(account) }
    }

    func snapshots(_ account: AccountName) async throws -> [SnapshotInfo] {
        let store = store
        return try await pool.run {
            guard FileManager.default.fileExists(atPath: store.root.accountPath(account)) || !store.listSnapshots(account).isEmpty else {
                throw AccountdError(.accountNotFound, "account \(account) does not exist", account: account.rawValue)
            }
            return store.listSnapshots(account)
        }
    }

    /// Restores a snapshot; an active account is opened again at once (and migrated if the copy is older).
    func restore(_ account: AccountName, snapshot: String?) async throws -> (SnapshotInfo, SnapshotInfo?, OpenOutcome?) {
        let store = store
        let preferences = preferences
        let (restored, saved) = try await pool.run {
            preferences.close(account)
            return try store.restore(account, snapshot: snapshot)
        }
        let replaced = saved.map { "the replaced file was kept as snapshot \($0.name)" } ?? "it had no file to replace (it had been removed)"
        logger.notice(
            "account \(account) restored from snapshot \(restored.name) (version \(restored.version)); \(replaced)",
            metadata: ["account": "\(account)"])
        var reopened: OpenOutcome?
        if account == active {
            reopened = try await switchTo(account, create: false, save: false, progress: nil).outcome
        }
        return (restored, saved, reopened)
    }

    /// The watchdog's store read (``LivenessCheck``): reads `state.json` under the data root
    /// and the daemon's shared state.
    ///
    /// Cheap, and it touches no account file, takes no account lock and needs no pool thread,
    /// so neither a long migration nor a busy client holds it up; a data root that no longer
    /// answers, or shared state that stays locked, does.
    func livenessRead() {
        _ = try? root.savedActiveAccount()
        _ = daemonStatus()
    }

    func info() -> JSONValue {
        let bundle = bundle
        return [
            "product": "accountd", "version": .string(AccountdVersion.current), "protocol": 1,
            "pid": JSONValue(Int(getpid())), "uptimeSeconds": JSONValue(Int(Date().timeIntervalSince(startedAt))),
            "dataRoot": .string(root.path),
            "bundle": ["version": JSONValue(bundle.targetVersion), "fingerprint": .string(bundle.fingerprint)],
        ]
    }
}

/// File sizes including a WAL.
enum FileSize {
    static func of(_ path: String) -> Int64 {
        func size(_ p: String) -> Int64 {
            ((try? FileManager.default.attributesOfItem(atPath: p)[.size]) as? Int64) ?? 0
        }
        return size(path) + size(path + "-wal")
    }
}
