import AccountdProtocol
import Foundation
import GRDB
import Synchronization

/// The account store: one SQLite file per account under a ``DataRoot``, kept at
/// the version of a ``SchemaBundle``.
///
/// ``open(_:create:progress:)`` is the heart of accountd. It compares the file
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
/// The store serialises operations per account within this process; an operation
/// that cannot get the account within ``Options/lockTimeout`` fails with `accountBusy`.
public final class AccountStore: Sendable {
    /// Settings of the store.
    public struct Options: Sendable {
        /// Snapshots kept per account (at least 1).
        public var snapshotsToKeep: Int = 5
        /// How long an operation waits for another on the same account.
        public var lockTimeout: Duration = .seconds(30)
        /// Run SQLite's `quick_check` when opening a file that is not already known to be sound.
        public var checkIntegrityOnOpen: Bool = true

        public init() {}
    }

    public let root: DataRoot
    public let bundle: SchemaBundle
    public let options: Options
    private let locks: AccountLocks
    /// Files that passed the deep check, by the stamp they had then: an unchanged file is not scanned again.
    private let checked = Mutex<[AccountName: FileStamp]>([:])
    /// What the last inspection found, by the stamps of the file and its WAL: switching back
    /// to an account whose files did not change reads nothing.
    private let known = Mutex<[AccountName: (main: FileStamp, wal: FileStamp?, facts: AccountFacts)]>([:])

    public init(root: DataRoot, bundle: SchemaBundle, options: Options = Options()) {
        self.root = root
        self.bundle = bundle
        self.options = options
        self.locks = AccountLocks()
    }

    private init(root: DataRoot, bundle: SchemaBundle, options: Options, locks: AccountLocks) {
        self.root = root
        self.bundle = bundle
        self.options = options
        self.locks = locks
    }

    /// A store over the same data root with another bundle, sharing this store's
    /// per-account locks, so an operation still running under the old bundle and one
    /// under the new never overlap on an account.
    public func replacing(bundle: SchemaBundle, options: Options) -> AccountStore {
        AccountStore(root: root, bundle: bundle, options: options, locks: locks)
    }

    var snapshots: SnapshotStore { SnapshotStore(root: root, keep: options.snapshotsToKeep) }

    /// Brings `account` to a usable state, following the decision table, and returns what was done.
    ///
    /// The returned outcome's file is closed again; callers open their own connections
    /// (see ``connect(_:)``).
    ///
    /// - Parameters:
    ///   - create: whether a missing account may be created.
    ///   - progress: called before each migration step.
    /// - Throws: ``AccountdError``: `accountNotFound`, `accountTooNew`, `accountCorrupt`,
    ///   `accountBusy`, `migrationFailed` or `storage`. On every error the file is as it was.
    public func open(_ account: AccountName, create: Bool = true, progress: ProgressHandler? = nil) throws -> OpenOutcome {
        try locks.withLock(account, timeout: options.lockTimeout) {
            try openLocked(account, create: create, progress: progress)
        }
    }

    /// Runs `body` while holding the account, as ``open(_:create:progress:)``, ``restore(_:snapshot:)``
    /// and ``verify(_:)`` do: for other work on the account's file (the daemon opens an
    /// account's preference table this way, so that it never races a migration or a restore).
    ///
    /// - Throws: `accountBusy` when the account is not free within ``Options/lockTimeout``,
    ///   or what `body` throws.
    public func withAccount<T>(_ account: AccountName, _ body: () throws -> T) throws -> T {
        try locks.withLock(account, timeout: options.lockTimeout, body)
    }

    private func openLocked(_ account: AccountName, create: Bool, progress: ProgressHandler?) throws -> OpenOutcome {
        let started = ContinuousClock.now
        let path = root.accountPath(account)
        let target = bundle.targetVersion
        func outcome(
            _ action: OpenOutcome.Action, from: Int? = nil, version: Int, compatible: Bool = false,
            method: SchemaBundle.CreationMethod? = nil, snapshot: SnapshotInfo? = nil, edited: [EditedMigration] = [],
            migrationMs: Double? = nil, snapshotMs: Double? = nil
        ) -> OpenOutcome {
            OpenOutcome(
                account: account, action: action, fromVersion: from, version: version, compatible: compatible,
                creationMethod: method, snapshot: snapshot, editedMigrations: edited,
                durationMs: (ContinuousClock.now - started).milliseconds, migrationMs: migrationMs, snapshotMs: snapshotMs)
        }

        if FileSystem.entry(at: path) == .missing {
            guard create else {
                throw AccountdError(
                    .accountNotFound, "account \(account) does not exist and creation was not allowed", account: account.rawValue,
                    file: path)
            }
            let method = try AccountBuilder(bundle: bundle, account: account, root: root).build()
            try runOnOpen(account, path: path)
            return outcome(.created, version: target, method: method)
        }

        let stamp = FileStamp(path: path)
        let walStamp = FileStamp(path: path + "-wal")
        let facts: AccountFacts
        if let stamp, let cached = known.withLock({ $0[account] }), cached.main == stamp, cached.wal == walStamp {
            facts = cached.facts
        } else {
            let deep = options.checkIntegrityOnOpen && (stamp == nil || checked.withLock { $0[account] } != stamp)
            facts = try AccountInspector.inspect(path: path, account: account, deep: deep, usable: isUsable)
        }
        // The daemon trusts its own writes: after this operation the file counts as checked.
        defer { if let now = FileStamp(path: path) { checked.withLock { $0[account] = now } } }
        func remember() {
            guard let main = FileStamp(path: path) else { return }
            let wal = FileStamp(path: path + "-wal")
            known.withLock { $0[account] = (main, wal, facts) }
        }
        known.withLock { $0[account] = nil }
        let edited = editedMigrations(facts)
        switch facts.version {
        case target:
            try runOnOpen(account, path: path)
            remember()
            return outcome(.opened, version: target, edited: edited)
        case ..<target:
            let snapshotStart = ContinuousClock.now
            let snapshot = try snapshots.take(account, source: path, reason: "before-migrate")
            let snapshotMs = (ContinuousClock.now - snapshotStart).milliseconds
            let migrationMs = try Migrator(bundle: bundle, account: account, path: path)
                .migrate(from: facts.version, progress: progress)
            try runOnOpen(account, path: path)
            return outcome(
                .migrated, from: facts.version, version: target, snapshot: snapshot, edited: edited, migrationMs: migrationMs,
                snapshotMs: snapshotMs)
        default:
            guard isUsable(facts) else { throw tooNew(account, facts) }
            remember()
            return outcome(.opened, version: facts.version, compatible: true, edited: edited)
        }
    }

    /// Runs `on-open.sql`, if the bundle has one, in one transaction.
    private func runOnOpen(_ account: AccountName, path: String) throws {
        guard let script = bundle.onOpenScript else { return }
        let queue = try DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: true, label: "on-open"))
        defer { try? queue.close() }
        do {
            try queue.write { db in try ScriptRunner.run(script, file: "on-open.sql", in: db) }
        } catch let error as ScriptRunner.Failure {
            throw AccountdError(
                .migrationFailed,
                "\(error.location) failed for account \(account): \(error.sqliteMessage); its changes were rolled back and the account was not opened",
                account: account.rawValue, file: error.file, line: error.line)
        }
    }

    /// Opens a read-write connection pool on an account file that ``open(_:create:progress:)`` made ready.
    ///
    /// The pool enforces foreign keys, uses WAL with `synchronous = FULL`, and accepts
    /// double-quoted string literals like the `sqlite3` shell.
    public func connect(_ account: AccountName) throws -> DatabasePool {
        var config = Connections.configuration(foreignKeys: true, label: "account \(account)")
        config.maximumReaderCount = 4
        let pool = try DatabasePool(path: root.accountPath(account), configuration: config)
        try Connections.requireFullSync(pool)
        return pool
    }

    /// The account's state relative to the bundle. Reads the file's records only: it
    /// never waits for a migration and never changes the file.
    public func status(_ account: AccountName) -> AccountStatus {
        let path = root.accountPath(account)
        let size = FileSystem.size(of: path) + FileSystem.size(of: path + "-wal")
        var status = AccountStatus(
            account: account, exists: FileSystem.exists(path), version: nil, target: bundle.targetVersion, state: .missing,
            sizeBytes: size, createdAt: nil, lastMigration: nil, editedMigrations: [], problem: nil)
        guard status.exists else { return status }
        do {
            let facts = try readFacts(account)
            status.version = facts.version
            status.createdAt = facts.createdAt
            status.lastMigration = facts.applied.last
            status.editedMigrations = editedMigrations(facts)
            status.state = state(of: facts)
        } catch let error as AccountdError where error.kind == .accountBusy {
            status.state = .migrating
        } catch {
            status.state = .corrupt
            status.problem = (error as? AccountdError)?.message ?? "\(error)"
        }
        return status
    }

    /// The state of `account`'s file when the daemon may use it as it is, without switching
    /// to it: `current`, `outdated` or `compatibleNewer`. Decides as ``open(_:create:progress:)``
    /// does, but never creates, migrates or writes: a refused file keeps every byte, and no
    /// `-wal` or `-shm` is left beside it.
    ///
    /// Call it while holding the account (``withAccount(_:_:)``), so that no migration or
    /// restore of this account runs between the check and the work it allows.
    ///
    /// - Throws: ``AccountdError``: `accountNotFound` for a missing file, `accountCorrupt` for a
    ///   file that is not SQLite, not an accountd file or bound to another account,
    ///   `accountTooNew` for a newer file not readable by this bundle, `accountBusy` when
    ///   another process holds it locked, `storage` when it cannot be opened at all.
    public func usableState(_ account: AccountName) throws -> AccountStatus.State {
        let facts = try readFacts(account)
        guard isUsable(facts) else { throw tooNew(account, facts) }
        return state(of: facts)
    }

    /// What the file says about itself: remembered from the last inspection while its file and
    /// WAL are unchanged, else read (shallowly: no page scan) without changing the file.
    private func readFacts(_ account: AccountName) throws -> AccountFacts {
        let path = root.accountPath(account)
        if let main = FileStamp(path: path), let cached = known.withLock({ $0[account] }), cached.main == main,
            cached.wal == FileStamp(path: path + "-wal")
        {
            return cached.facts
        }
        return try AccountInspector.inspect(path: path, account: account, deep: false, usable: isUsable)
    }

    /// Where a readable file stands against the bundle's target.
    private func state(of facts: AccountFacts) -> AccountStatus.State {
        let target = bundle.targetVersion
        if facts.version == target { return .current }
        if facts.version < target { return .outdated }
        return facts.lastCompatibleVersion <= target ? .compatibleNewer : .tooNew
    }

    /// The refusal of a file newer than the bundle and not readable by it.
    private func tooNew(_ account: AccountName, _ facts: AccountFacts) -> AccountdError {
        let target = bundle.targetVersion
        return AccountdError(
            .accountTooNew,
            "account \(account) is at version \(facts.version), newer than this bundle's \(target), and needs a bundle "
                + "at version \(facts.lastCompatibleVersion) or later to be read; upgrade the app. The file was left untouched",
            account: account.rawValue, file: root.accountPath(account), fromVersion: facts.version, toVersion: target)
    }

    /// A full check of an account file: integrity, foreign keys, schema and edited migrations.
    ///
    /// - Throws: ``AccountdError`` when the file is missing or not an account file.
    public func verify(_ account: AccountName) throws -> VerifyReport {
        try locks.withLock(account, timeout: options.lockTimeout) {
            let path = root.accountPath(account)
            let facts = try AccountInspector.inspect(path: path, account: account, deep: false)
            let queue = try DatabaseQueue(
                path: path, configuration: Connections.configuration(foreignKeys: false, readonly: true, label: "verify"))
            defer { try? queue.close() }
            return try queue.read { db in
                let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
                let foreignKeys = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").map { row in
                    "table \(row["table"] as String) row \((row["rowid"] as Int64?).map(String.init) ?? "?") references a missing row in \(row["parent"] as String)"
                }
                let schema: [String]
                if facts.version == bundle.targetVersion {
                    schema = SchemaDiff(leftName: "the file", rightName: "the bundle's target schema")
                        .differences(try SchemaReader.read(db), bundle.targetSchema)
                } else {
                    schema = ["the file is at version \(facts.version) and the bundle at \(bundle.targetVersion); the schema is compared when they match"]
                }
                return VerifyReport(
                    account: account, integrity: integrity, foreignKeys: foreignKeys, schema: schema,
                    editedMigrations: editedMigrations(facts))
            }
        }
    }

    /// The account's snapshots, newest first.
    public func listSnapshots(_ account: AccountName) -> [SnapshotInfo] {
        snapshots.list(account)
    }

    /// Takes a snapshot of the account now.
    public func takeSnapshot(_ account: AccountName, reason: String = "manual") throws -> SnapshotInfo {
        try locks.withLock(account, timeout: options.lockTimeout) {
            _ = try AccountInspector.inspect(path: root.accountPath(account), account: account, deep: false)
            return try snapshots.take(account, source: root.accountPath(account), reason: reason)
        }
    }

    /// Replaces the account file with a snapshot (the newest when `name` is nil), after
    /// first taking a snapshot of the current file.
    ///
    /// Callers must have closed their connections to the account. The current file is
    /// checkpointed, its snapshot taken, and the restored copy is moved into place with
    /// an atomic rename, so a crash leaves either the old file or the restored one.
    ///
    /// - Returns: the snapshot restored, and the snapshot taken of the file it replaced.
    /// - Throws: ``AccountdError``: `snapshotNotFound`, `accountCorrupt` when the snapshot is
    ///   not a sound copy of this account, `accountBusy`, `storage`.
    public func restore(_ account: AccountName, snapshot name: String?) throws -> (restored: SnapshotInfo, saved: SnapshotInfo?) {
        try locks.withLock(account, timeout: options.lockTimeout) {
            known.withLock { $0[account] = nil }
            let chosen = try snapshots.find(account, name: name)
            _ = try AccountInspector.inspect(path: chosen.path, account: account, deep: true)
            let path = root.accountPath(account)
            var saved: SnapshotInfo?
            if FileSystem.exists(path) {
                if (try? AccountInspector.inspect(path: path, account: account, deep: false)) != nil {
                    let queue = try DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: false, label: "restore"))
                    try queue.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
                    try queue.close()
                    saved = try snapshots.take(account, source: path, reason: "before-restore")
                } else {
                    saved = try snapshots.takeRaw(account, source: path, reason: "before-restore-unreadable")
                }
            }
            let temp = root.accountsDirectory + "/." + account.rawValue + ".sqlite.restoring"
            for suffix in ["", "-wal", "-shm"] { try FileSystem.removeIfPresent(temp + suffix) }
            try FileSystem.copyFile(chosen.path, to: temp)
            for suffix in ["-wal", "-shm"] { try FileSystem.removeIfPresent(path + suffix) }
            try FileSystem.durableRename(temp, to: path)
            // Leave the snapshot list as it was before the restore plus the saved copy: the
            // restored snapshot stays listed.
            return (chosen, saved)
        }
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
