import AccountdProtocol
import Foundation
import GRDB
import Synchronization

/// The account store: one SQLite file per account under a ``DataRoot``, kept at
/// the version of a ``SchemaBundle``.
///
/// ``open(_:create:holding:progress:)`` is the heart of accountd. It compares the file
/// with the bundle and acts on exactly one row of the decision table:
///
/// | the file | action |
/// |---|---|
/// | missing | create it at the target version (refused when `create` is false) |
/// | at the target | open it and run `on-open.sql` |
/// | older | snapshot, then migrate in one transaction |
/// | newer, readable by this bundle | open it, changing nothing |
/// | newer, not readable | refuse (`accountTooNew`), touching nothing |
/// | not an account file for this account | refuse (`accountCorrupt`), touching nothing |
///
/// The store serialises operations per account within this process, first come, first
/// served; an operation that cannot get the account within ``Options/lockTimeout`` fails
/// with `accountBusy`. Each locked operation takes the account's lock itself, or runs
/// under an ``AccountHold`` the caller took before (`holding:`), which lets a task wait
/// for a busy account without holding a thread (see ``hold(_:)``).
public final class AccountStore: Sendable {
    /// Settings of the store.
    public struct Options: Sendable, Equatable {
        /// Snapshots kept per account (at least 1); see ``SnapshotRetention``.
        public var snapshotsToKeep: Int = 5
        /// Snapshots older than this many days go when the next one is taken; 0 keeps by count only.
        public var snapshotMaxAgeDays: Int = 0
        /// How long an operation waits for another on the same account.
        public var lockTimeout: Duration = .seconds(30)
        /// Run SQLite's `quick_check` when opening a file that is not already known to be sound.
        public var checkIntegrityOnOpen: Bool = true

        public init() {}
    }

    public let root: DataRoot
    public let bundle: SchemaBundle
    /// The bundle's target version, kept apart: reading it from another module costs no
    /// copy of the whole bundle, which the requests that check it (every Get and Set) would pay.
    public let targetVersion: Int
    public let options: Options
    let locks: AccountLocks
    /// A number that changes whenever a hold on any account begins or ends (every handoff,
    /// restore, removal, import, migration and write runs under one), when a handoff is
    /// recorded and at a reload; shared with the stores ``replacing(bundle:options:)`` makes. A
    /// caller that made the path checks of an unlocked read (``DataRoot/refuseHandedOff(_:)``,
    /// ``DataRoot/refuseLinkedFolders(_:)``) having read it before may skip them while it is
    /// unchanged, and must make them again once it changed. One atomic load.
    public var checksEpoch: UInt64 { locks.epoch }
    /// Snapshots retention leaves alone for now; shared with the stores ``replacing(bundle:options:)`` makes.
    public let pins: SnapshotPins
    /// Files that passed the deep check, by the stamp they had then: an unchanged file is not
    /// scanned again. Bounded, like ``known``: a forgotten file is only checked again.
    let checked = Mutex(BoundedCache<AccountName, FileStamp>(capacity: AccountStore.rememberedAccounts))
    /// What the last inspection found, by the stamps of the file and its WAL: switching back
    /// to an account whose files did not change reads nothing.
    let known = Mutex(
        BoundedCache<AccountName, (main: FileStamp, wal: FileStamp?, facts: AccountFacts)>(capacity: AccountStore.rememberedAccounts))
    /// Schemas already found equal to the bundle's target by a migration.
    let matchedSchemas = MatchedSchemas()
    /// The bundles whose migrations may still run; shared with the stores ``replacing(bundle:options:)`` makes.
    let withdrawals: BundleWithdrawals
    /// Stops this store's migrations when a reload withdraws its bundle (see ``BundleWithdrawals``), and at SIGTERM.
    let withdrawal: SQLiteInterrupt
    /// How many accounts' facts are remembered at most: the working set of switches, while
    /// a fleet of any size touched by `Migrate` leaves memory flat.
    static let rememberedAccounts = 1024

    public init(root: DataRoot, bundle: SchemaBundle, options: Options = Options()) {
        self.root = root
        self.bundle = bundle
        self.targetVersion = bundle.targetVersion
        self.options = options
        self.locks = AccountLocks()
        self.pins = SnapshotPins()
        withdrawal = SQLiteInterrupt()
        withdrawals = BundleWithdrawals(first: bundle, interrupt: withdrawal)
    }

    private init(root: DataRoot, bundle: SchemaBundle, options: Options, locks: AccountLocks, pins: SnapshotPins, withdrawals: BundleWithdrawals) {
        self.root = root
        self.bundle = bundle
        self.targetVersion = bundle.targetVersion
        self.options = options
        self.locks = locks
        self.pins = pins
        self.withdrawals = withdrawals
        withdrawal = withdrawals.bringing(bundle)
    }

    /// Whether a reload withdrew this store's bundle: a bundle now in force does not reach its
    /// target (``BundleWithdrawals``). Its migrations running were stopped and rolled back
    /// whole, and nothing more is opened under it.
    public var isWithdrawn: Bool { withdrawal.isStopped && !SQLiteInterrupt.isStopping }

    /// A store over the same data root with another bundle, sharing this store's
    /// per-account locks, so an operation still running under the old bundle and one
    /// under the new never overlap on an account. When `bundle` does not reach the target of
    /// this store's bundle (or of an earlier one whose migrations may still run), that bundle
    /// is withdrawn: its running migrations stop and roll back whole (``isWithdrawn``).
    public func replacing(bundle: SchemaBundle, options: Options) -> AccountStore {
        // A reload: checks remembered under the old bundle are made again (``checksEpoch``).
        locks.changed()
        return AccountStore(root: root, bundle: bundle, options: options, locks: locks, pins: pins, withdrawals: withdrawals)
    }

    var snapshots: SnapshotStore {
        SnapshotStore(
            root: root, retention: SnapshotRetention(keep: max(options.snapshotsToKeep, 1), maximumAgeDays: max(options.snapshotMaxAgeDays, 0)),
            busy: options.lockTimeout, pins: pins)
    }

    /// Brings `account` to a usable state, following the decision table, and returns what was done.
    ///
    /// The returned outcome's file is closed again; callers open their own connections.
    ///
    /// - Parameters:
    ///   - create: whether a missing account may be created.
    ///   - hold: the account's hold, taken before (``hold(_:)``); nil to take the lock here,
    ///     waiting on this thread.
    ///   - progress: called before each migration step.
    /// - Throws: ``AccountdError``: `accountNotFound`, `accountTooNew`, `accountCorrupt`,
    ///   `accountBusy`, `migrationFailed` or `storage`. On every error the file is as it was.
    public func open(
        _ account: AccountName, create: Bool = true, holding hold: AccountHold? = nil, progress: ProgressHandler? = nil
    ) throws -> OpenOutcome {
        try underLock(account, holding: hold) {
            try openLocked(account, create: create, progress: progress)
        }
    }

    /// Runs `body` while holding the account, as ``open(_:create:holding:progress:)``,
    /// ``restore(_:snapshot:holding:)`` and ``verify(_:holding:)`` do: for other work on the
    /// account's file (the daemon opens an account's preference table this way, so that it
    /// never races a migration or a restore).
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Throws: `accountBusy` when the account is not free within ``Options/lockTimeout``,
    ///   or what `body` throws.
    public func withAccount<T>(_ account: AccountName, holding hold: AccountHold? = nil, _ body: () throws -> T) throws -> T {
        try underLock(account, holding: hold, body)
    }

    /// ``open(_:create:holding:progress:)`` under the account's lock, in its steps: a missing
    /// file is created (or refused), the file's facts are recalled or inspected (migrating it
    /// when it is below the bundle), then the outcome is decided by its version.
    private func openLocked(_ account: AccountName, create: Bool, progress: ProgressHandler?) throws -> OpenOutcome {
        let started = ContinuousClock.now
        let path = root.accountPath(account)
        if isWithdrawn { throw AccountdError.withdrawnBeforeOpen(account, bundle: bundle, path: path) }
        if FileSystem.entry(at: path) == .missing {
            return try createMissing(account, path: path, allowed: create, started: started)
        }
        let (facts, migrated) = try recallOrInspect(account, path: path, progress: progress)
        // The daemon trusts its own writes: after this operation the file counts as checked.
        defer { if let now = FileStamp(path: path) { checked.withLock { $0[account] = now } } }
        known.withLock { $0[account] = nil }
        return try decide(account, path: path, facts: facts, migrated: migrated, started: started)
    }

    /// Creates a missing account from the bundle, or refuses when creation is not allowed.
    private func createMissing(_ account: AccountName, path: String, allowed: Bool, started: ContinuousClock.Instant) throws -> OpenOutcome {
        guard allowed else {
            throw AccountdError(
                .accountNotFound, "account \(account) does not exist and creation was not allowed", account: account.rawValue,
                file: path)
        }
        let target = bundle.targetVersion
        let method = try AccountBuilder(bundle: bundle, account: account, root: root).build()
        try runOnOpen(account, path: path, after: .created(version: target))
        return outcome(account, started: started, .created, version: target, method: method)
    }

    /// The file's facts: remembered from the last open while its file and `-wal` are
    /// unchanged and it is not below the bundle, else read by inspecting it, which migrates
    /// a file below the bundle (after a snapshot) in the same step.
    private func recallOrInspect(_ account: AccountName, path: String, progress: ProgressHandler?) throws -> (AccountFacts, Migrated?) {
        let target = bundle.targetVersion
        let stamp = FileStamp(path: path)
        let walStamp = FileStamp(path: path + "-wal")
        // Facts remembered by a shallow read (``readFacts(_:busy:)``) are taken only for a file
        // that passed the deep check at this stamp.
        // A lock changes no stamp: a file another process holds locked is read again, which
        // waits for it up to the lock timeout and then refuses it with `AccountBusy` (one
        // read of `/proc/locks`, so that a switch never reports ready an account it cannot use).
        if let stamp, let cached = known.withLock({ $0[account] }), cached.main == stamp, cached.wal == walStamp,
            cached.facts.version >= target, !options.checkIntegrityOnOpen || checked.withLock({ $0[account] }) == stamp,
            !OtherProcessLocks.read().holds(stamp)
        {
            return (cached.facts, nil)
        }
        let deep = options.checkIntegrityOnOpen && (stamp == nil || checked.withLock { $0[account] } != stamp)
        let inspected = try AccountInspector.inspect(
            path: path, account: account, deep: deep, usable: isUsable, writableBelow: target, busy: options.lockTimeout
        ) { db, facts, file in
            // The snapshot is copied on the connection that inspected the file, in the same read transaction.
            facts.version < target ? try snapshotBeforeMigrating(account, reading: db, file: file) : nil
        } afterwards: { writer, facts, snapshot in
            try migrate(account, path: path, on: writer, from: facts.version, after: snapshot, progress: progress)
        }
        return (inspected.facts, inspected.result)
    }

    /// What the open did, by the file's version: opened at the bundle's, migrated from below
    /// it, or opened newer and readable; the facts are remembered for the next open unless
    /// it migrated.
    private func decide(
        _ account: AccountName, path: String, facts: AccountFacts, migrated: Migrated?, started: ContinuousClock.Instant
    ) throws -> OpenOutcome {
        let target = bundle.targetVersion
        let edited = editedMigrations(facts)
        switch facts.version {
        case target:
            try runOnOpen(account, path: path, after: .opened)
            remember(account, path: path, facts: facts)
            return outcome(account, started: started, .opened, version: target, edited: edited)
        case ..<target:
            guard let migrated else {
                // Not reached: a file below the target is never taken from the cache, and one that passed inspection was migrated.
                throw AccountdError(
                    .migrationFailed, "account \(account) at version \(facts.version) was not migrated to \(target); switch again",
                    account: account.rawValue, file: path, fromVersion: facts.version, toVersion: target)
            }
            try runOnOpen(account, path: path, after: .migrated(from: facts.version, to: target))
            return outcome(
                account, started: started, .migrated, from: facts.version, version: target, snapshot: migrated.snapshot, edited: edited,
                migrationMs: migrated.migrationMs, snapshotMs: migrated.snapshotMs)
        default:
            guard isUsable(facts) else { throw tooNew(account, facts) }
            remember(account, path: path, facts: facts)
            return outcome(account, started: started, .opened, version: facts.version, compatible: true, edited: edited)
        }
    }

    /// Remembers `facts` with the stamps of the file and its `-wal` as they are now.
    private func remember(_ account: AccountName, path: String, facts: AccountFacts) {
        guard let main = FileStamp(path: path) else { return }
        let wal = FileStamp(path: path + "-wal")
        known.withLock { $0[account] = (main, wal, facts) }
    }

    /// An open's outcome, timed from `started`.
    private func outcome(
        _ account: AccountName, started: ContinuousClock.Instant, _ action: OpenOutcome.Action, from: Int? = nil, version: Int,
        compatible: Bool = false, method: SchemaBundle.CreationMethod? = nil, snapshot: SnapshotInfo? = nil,
        edited: [EditedMigration] = [], migrationMs: Double? = nil, snapshotMs: Double? = nil
    ) -> OpenOutcome {
        OpenOutcome(
            account: account, action: action, fromVersion: from, version: version, compatible: compatible,
            creationMethod: method, snapshot: snapshot, editedMigrations: edited,
            durationMs: (ContinuousClock.now - started).milliseconds, migrationMs: migrationMs, snapshotMs: snapshotMs)
    }

    /// A migration's snapshot and timings.
    private struct Migrated {
        var snapshot: SnapshotInfo
        var snapshotMs: Double
        var migrationMs: Double
    }

    /// Takes the snapshot before a migration from `db`, a connection to the account's file in
    /// a read transaction, with `file` opened before it.
    private func snapshotBeforeMigrating(
        _ account: AccountName, reading db: Database, file: ReadOnlyFile
    ) throws -> (info: SnapshotInfo, milliseconds: Double) {
        let started = ContinuousClock.now
        // A retry after a failed migration finds the file as the last one left it: its
        // snapshot is reused, so failures never push older snapshots out of retention.
        let info = try snapshots.take(account, reading: db, file: file, reason: "before-migrate", reusingSameState: true)
        return (info, (ContinuousClock.now - started).milliseconds)
    }

    /// Migrates the file, whose snapshot was taken, on `writer` (nil: a connection of its own).
    private func migrate(
        _ account: AccountName, path: String, on writer: DatabaseQueue?, from version: Int,
        after snapshot: (info: SnapshotInfo, milliseconds: Double), progress: ProgressHandler?
    ) throws -> Migrated {
        let milliseconds = try Migrator(
            bundle: bundle, account: account, path: path, matched: matchedSchemas, busy: options.lockTimeout, interrupt: withdrawal
        )
            .migrate(on: writer, from: version, progress: progress)
        return Migrated(snapshot: snapshot.info, snapshotMs: snapshot.milliseconds, migrationMs: milliseconds)
    }

    /// What an operation did to the file before `on-open.sql` ran: what stays if the script fails.
    private enum BeforeOnOpen {
        case opened
        case created(version: Int)
        case migrated(from: Int, to: Int)
    }

    /// Runs `on-open.sql`, if the bundle has one, in one transaction.
    ///
    /// - Throws: `migrationFailed` when the script fails. Only the script's own changes are
    ///   undone: a creation or a migration before it is committed, and the message says so.
    private func runOnOpen(_ account: AccountName, path: String, after done: BeforeOnOpen) throws {
        guard let script = bundle.onOpenScript else { return }
        let queue = try DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: true, label: "on-open", busy: options.lockTimeout))
        defer { try? queue.close() }
        do {
            try queue.write { db in try ScriptRunner.run(script, file: "on-open.sql", in: db) }
        } catch let error as ScriptRunner.Failure {
            let failed = "\(error.location) failed for account \(account): \(error.sqliteMessage)"
            let notKept = "nothing on-open.sql did was kept and the account was not opened; fix on-open.sql and switch again"
            let (message, from, to): (String, Int?, Int?) =
                switch done {
                case .opened:
                    ("\(failed); the file was not changed and the account was not opened; fix on-open.sql and switch again", nil, nil)
                case .created(let version):
                    ("account \(account) was created at version \(version), and that stays; then \(failed); \(notKept)", nil, version)
                case .migrated(let from, let to):
                    (
                        "account \(account) was migrated from version \(from) to \(to) and the migration is committed: the file stays at "
                            + "version \(to) and will not be migrated again. Then \(failed); \(notKept)", from, to
                    )
                }
            throw AccountdError(.migrationFailed, message, account: account.rawValue, file: error.file, line: error.line, fromVersion: from, toVersion: to)
        }
    }

    /// The account's state relative to the bundle. Reads the file's records only: it
    /// never waits for a migration and never changes the file.
    ///
    /// - Parameter locks: the files other processes hold locked, read once for many calls;
    ///   nil reads them now. A file so locked is `unavailable` whatever was last read of it.
    public func status(_ account: AccountName, locks: OtherProcessLocks? = nil) -> AccountStatus {
        let path = root.accountPath(account)
        var status = AccountStatus(
            account: account, exists: FileSystem.exists(path), version: nil, target: bundle.targetVersion, state: .missing,
            sizeBytes: sizeOnDisk(account), createdAt: nil, lastMigration: nil, editedMigrations: [], problem: nil)
        guard status.exists else { return status }
        do {
            try root.refuseLinkedFolders(account)
            if (locks ?? OtherProcessLocks.read()).holds(path) {
                throw AccountdError(.accountBusy, "account \(account) is locked by another process", account: account.rawValue, file: path)
            }
            // Status never waits: not for SQLite's busy timeout either.
            let facts = try readFacts(account, busy: .zero)
            status.version = facts.version
            status.createdAt = facts.createdAt
            status.lastMigration = facts.applied.last
            status.editedMigrations = editedMigrations(facts)
            status.state = state(of: facts)
        } catch let error as AccountdError where error.kind == .accountBusy {
            // A migration by this daemon is said by the daemon's board, before this is read:
            // a lock here is another process's, and the file is not usable until it lets go.
            status.state = .unavailable
            status.version = (try? SnapshotStore.version(of: path)).flatMap { $0 > 0 ? $0 : nil }
            status.problem =
                "another process holds account \(account)'s file \(path) locked, so it cannot be read now"
                + (status.version.map { " (its header says version \($0))" } ?? "")
                + "; find it with 'fuser \(path)' and try again when it lets go"
        } catch let error as AccountdError where error.kind == .storage {
            // The disk's doing (full, failing) or the file cannot be opened: not the file's fault.
            status.state = .unavailable
            status.problem = error.message
        } catch {
            status.state = .corrupt
            status.problem = (error as? AccountdError)?.message ?? "\(error)"
        }
        return status
    }

    /// The bytes `account` takes on disk: its file and its `-wal`; 0 for a missing account.
    /// Two `lstat` calls: no file is opened, and no owner or group is looked up.
    public func sizeOnDisk(_ account: AccountName) -> Int64 {
        let path = root.accountPath(account)
        return FileSystem.size(of: path) + FileSystem.size(of: path + "-wal")
    }

    /// The state of `account`'s file when the daemon may use it as it is, without switching
    /// to it: `current`, `outdated` or `compatibleNewer`. Decides as ``open(_:create:holding:progress:)``
    /// does, but never creates, migrates or writes: a refused file keeps every byte, and no
    /// `-wal` or `-shm` is left beside it.
    ///
    /// Call it while holding the account (``withAccount(_:holding:_:)``), so that no migration or
    /// restore of this account runs between the check and the work it allows.
    ///
    /// - Throws: ``AccountdError``: `accountNotFound` for a missing file, `accountCorrupt` for a
    ///   file that is not SQLite, not an accountd file or bound to another account,
    ///   `accountTooNew` for a newer file not readable by this bundle, `accountBusy` when
    ///   another process holds it locked, `storage` when it cannot be opened at all.
    public func usableState(_ account: AccountName) throws -> AccountStatus.State {
        let facts = try readFacts(account, probingLocks: true)
        guard isUsable(facts) else { throw tooNew(account, facts) }
        return state(of: facts)
    }

    /// What the file says about itself: remembered from the last inspection while its file and
    /// WAL are unchanged, else read (shallowly: no page scan) without changing the file.
    ///
    /// - Parameters:
    ///   - busy: how long to wait for another process's lock on the file; nil waits
    ///     ``Options/lockTimeout``.
    ///   - probingLocks: remembered facts are taken only while no other process holds the
    ///     file locked (a lock changes no stamp); else the file is read, which waits for the
    ///     lock and then refuses it with `AccountBusy`. One read of `/proc/locks`.
    private func readFacts(_ account: AccountName, busy: Duration? = nil, probingLocks: Bool = false) throws -> AccountFacts {
        let path = root.accountPath(account)
        let main = FileStamp(path: path)
        let wal = FileStamp(path: path + "-wal")
        if let main, let cached = known.withLock({ $0[account] }), cached.main == main, cached.wal == wal,
            !probingLocks || !OtherProcessLocks.read().holds(main)
        {
            return cached.facts
        }
        let facts = try AccountInspector.inspect(path: path, account: account, deep: false, usable: isUsable, busy: busy ?? options.lockTimeout)
        // Remembered only when neither file changed while it was read (nor just before it, see
        // ``FileStamp/settled(margin:)``), so that what was read is what the stamps describe;
        // but a read-only connection leaves an empty `-wal` where there was none, which
        // changes nothing read. (``open(_:create:holding:progress:)``
        // still scans a file remembered this way once, as ``checked`` does not have it.)
        let walAfter = FileStamp(path: path + "-wal")
        if let main, main == FileStamp(path: path), main.settled(), walAfter == wal || (wal == nil && walAfter?.size == 0) {
            known.withLock { $0[account] = (main, walAfter, facts) }
        }
        return facts
    }

    /// Where a readable file stands against the bundle's target.
    private func state(of facts: AccountFacts) -> AccountStatus.State {
        let target = bundle.targetVersion
        if facts.version == target { return .current }
        if facts.version < target { return .outdated }
        return facts.lastCompatibleVersion <= target ? .compatibleNewer : .tooNew
    }

    /// The refusal of a file newer than the bundle and not readable by it.
    func tooNew(_ account: AccountName, _ facts: AccountFacts) -> AccountdError {
        let target = bundle.targetVersion
        let reason = "is at version \(facts.version), newer than this bundle's \(target), and needs a bundle at version \(facts.lastCompatibleVersion) or later to be read"
        var error = AccountdError(
            .accountTooNew, "account \(account) \(reason); upgrade the app. The file was left untouched",
            account: account.rawValue, file: root.accountPath(account), fromVersion: facts.version, toVersion: target)
        error.reason = reason
        return error
    }

    /// Whether this bundle can use a file with these facts: not one that is too new for it.
    func isUsable(_ facts: AccountFacts) -> Bool {
        facts.version <= bundle.targetVersion || facts.lastCompatibleVersion <= bundle.targetVersion
    }

    /// Applied migrations whose bundle files changed since they were applied.
    func editedMigrations(_ facts: AccountFacts) -> [EditedMigration] {
        facts.applied.compactMap { applied in
            guard let migration = bundle.migration(applied.version), migration.sha256 != applied.sha256 else { return nil }
            return EditedMigration(
                version: applied.version, name: applied.name, appliedSHA256: applied.sha256, bundleSHA256: migration.sha256)
        }
    }
}
