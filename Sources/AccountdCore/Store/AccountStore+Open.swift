import AccountdProtocol
import Foundation
import GRDB

/// Opening an account: ``AccountStore/open(_:create:holding:progress:)`` and its steps, in
/// the order they happen (create a missing file, recall or inspect the file's facts and
/// migrate it after a snapshot, decide the outcome by its version, run `on-open.sql`).
extension AccountStore {
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

    /// ``open(_:create:holding:progress:)`` under the account's lock, in its steps: a missing
    /// file is created (or refused), the file's facts are recalled or inspected (migrating it
    /// when it is below the bundle), then the outcome is decided by its version.
    func openLocked(_ account: AccountName, create: Bool, progress: ProgressHandler?) throws -> OpenOutcome {
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
}
