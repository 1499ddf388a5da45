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
