import AccountdProtocol
import GRDB

extension AccountStore {
    /// The account's snapshots, newest first.
    public func listSnapshots(_ account: AccountName) -> [SnapshotInfo] {
        snapshots.list(account)
    }

    /// Takes a snapshot of the account now, named `<timestamp>-v<version>-<label>`, and
    /// applies retention (``SnapshotRetention``) to the older ones.
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Throws: ``AccountdError``: `accountNotFound` when the account has no file,
    ///   `accountCorrupt` when the file is not a sound account file, `accountBusy`, `storage`.
    public func takeSnapshot(_ account: AccountName, label: SnapshotLabel = .manual, holding hold: AccountHold? = nil) throws -> SnapshotInfo {
        try underLock(account, holding: hold) {
            _ = try AccountInspector.inspect(path: root.accountPath(account), account: account, deep: false)
            return try snapshots.take(account, source: root.accountPath(account), reason: label.rawValue)
        }
    }

    /// Replaces the account file with a snapshot (the newest when `name` is nil), after
    /// first taking a snapshot of the current file.
    ///
    /// Callers must have closed their connections to the account. The current file is
    /// checkpointed, its snapshot taken, and the restored copy is put in WAL mode, like
    /// every account file, then moved into place with an atomic rename, so a crash leaves
    /// either the old file or the restored one. The snapshot being restored is never
    /// removed by the retention that follows the new snapshot, whatever `snapshotsToKeep`
    /// is. An account without a file (a removed one) is restored too: its file comes back.
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Returns: the snapshot restored, and the snapshot taken of the file it replaced.
    /// - Throws: ``AccountdError``: `snapshotNotFound`, `accountCorrupt` when the snapshot is
    ///   not a sound copy of this account, `accountBusy`, `storage`.
    public func restore(
        _ account: AccountName, snapshot name: String?, holding hold: AccountHold? = nil
    ) throws -> (restored: SnapshotInfo, saved: SnapshotInfo?) {
        try underLock(account, holding: hold) {
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
                    saved = try snapshots.take(account, source: path, reason: "before-restore", protecting: [chosen.name])
                } else {
                    saved = try snapshots.takeRaw(account, source: path, reason: "before-restore-unreadable", protecting: [chosen.name])
                }
            }
            let temp = root.stagingPath(account, .restoring)
            try FileSystem.removeWithCompanions(temp)
            do {
                try FileSystem.copyFile(chosen.path, to: temp)
                try Self.useWAL(temp)
            } catch {
                try? FileSystem.removeWithCompanions(temp)
                throw error
            }
            for suffix in ["-wal", "-shm"] { try FileSystem.removeIfPresent(path + suffix) }
            try FileSystem.durableRename(temp, to: path)
            // The restored snapshot stays listed: the list is what it was plus the saved copy.
            return (chosen, saved)
        }
    }

    /// Puts the file at `path` in WAL mode and syncs it, leaving no `-wal` or `-shm` beside it.
    ///
    /// `VACUUM INTO` writes its copy in rollback-journal mode; an account file must be in
    /// WAL mode before it is moved into place, or a writer would block every reader until
    /// something reopened it.
    private static func useWAL(_ path: String) throws {
        let queue = try DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: false, label: "restore"))
        let mode = try queue.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
        try queue.close()
        // The last connection closed has checkpointed everything; what may be left is empty.
        for suffix in ["-wal", "-shm"] { try FileSystem.removeIfPresent(path + suffix) }
        guard mode?.lowercased() == "wal" else {
            throw AccountdError(
                .storage, "putting the restored copy \(path) in WAL mode failed (journal_mode is \(mode ?? "unknown")); the account was not changed",
                file: path)
        }
        try FileSystem.fsyncFile(path)
    }
}
