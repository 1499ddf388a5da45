import AccountdProtocol
import GRDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
            _ = try AccountInspector.inspect(path: root.accountPath(account), account: account, deep: false, busy: options.lockTimeout)
            return try snapshots.take(account, source: root.accountPath(account), reason: label.rawValue)
        }
    }

    /// Replaces the account file with a snapshot (when `name` is nil, the newest one this
    /// bundle can open: ``restorable(_:name:)``), after first taking a snapshot of the current file.
    ///
    /// Callers must have closed their connections to the account. A snapshot of the current
    /// file is taken, then the chosen snapshot is copied to a staging file in WAL mode, like
    /// every account file, and written into the account file with SQLite's backup API: one
    /// write transaction through the WAL, so a crash leaves either the old content or the
    /// restored one, and the file keeps its identity. A replicator reading the WAL
    /// (Litestream) sees an ordinary transaction; a file replaced by a rename would leave
    /// it replicating the old one. Litestream's own tables (``LitestreamTables``) of the
    /// current file are kept. Only a file that is missing or unreadable is replaced by an
    /// atomic rename of the staging copy. The snapshot being restored is never
    /// removed by the retention that follows the new snapshot, whatever `snapshotsToKeep`
    /// is. An account without a file (a removed one) is restored too: its file comes back.
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Returns: the snapshot restored, and the snapshot taken of the file it replaced.
    /// - Throws: ``AccountdError``: `snapshotNotFound`, `accountTooNew` when the snapshot is
    ///   newer than this bundle can open (before any snapshot is taken or anything replaced),
    ///   `accountCorrupt` when the snapshot is not a sound copy of this account, `accountBusy`, `storage`.
    ///
    /// An account handed off from this host is refused (`accountMoved`) unless `reclaim`:
    /// then the restore ends the handoff here (``DataRoot/eraseHandoff(_:)``), once the file
    /// is in place.
    public func restore(
        _ account: AccountName, snapshot name: String?, reclaim: Bool = false, holding hold: AccountHold? = nil
    ) throws -> (restored: SnapshotInfo, saved: SnapshotInfo?) {
        try underLock(account, holding: hold, allowingMoved: reclaim) {
            let chosen = try restorable(account, name: name)
            let saved = try replaceContent(of: account, with: chosen.path, protecting: [chosen.name])
            // The account is back on this host by the operator's explicit choice.
            if reclaim { try root.eraseHandoff(account) }
            // The restored snapshot stays listed: the list is what it was plus the saved copy.
            return (chosen, saved)
        }
    }

    /// The snapshot a restore of `account` would bring back: `name`, or the newest snapshot
    /// this bundle can open when `name` is nil (a newer one, from before a downgrade, is passed
    /// over: restoring it would leave the account unopenable and its `before-restore` copies
    /// would push the older snapshots out).
    ///
    /// - Throws: ``AccountdError``: `snapshotNotFound`; `accountTooNew` when the snapshot named,
    ///   or every snapshot, is newer than this bundle can open, naming the snapshot to restore
    ///   instead when there is one.
    func restorable(_ account: AccountName, name: String?) throws -> SnapshotInfo {
        let all = snapshots.list(account)
        func facts(_ snapshot: SnapshotInfo) -> AccountFacts? {
            try? AccountInspector.inspect(path: snapshot.path, account: account, deep: false, busy: options.lockTimeout)
        }
        // A snapshot that cannot be inspected is not judged here: the restore's own check says why.
        let usable = all.first { snapshot in facts(snapshot).map(isUsable) ?? false }
        let chosen: SnapshotInfo
        if let name {
            chosen = try snapshots.find(account, name: name)
        } else {
            guard let newest = all.first else {
                throw AccountdError(.snapshotNotFound, "account \(account) has no snapshots", account: account.rawValue)
            }
            chosen = usable ?? newest
        }
        guard let chosenFacts = facts(chosen), !isUsable(chosenFacts) else { return chosen }
        let instead =
            usable.map { "restore \($0.name) (version \($0.version)), the newest snapshot this bundle can open: 'accountctl restore \(account) \($0.name)'" }
            ?? "no snapshot of it can be opened by this bundle; install the app (bundle) at version \(chosenFacts.lastCompatibleVersion) or later, then restore"
        throw AccountdError(
            .accountTooNew,
            "snapshot \(chosen.name) of account \(account) is at version \(chosenFacts.version), newer than this bundle's \(bundle.targetVersion), "
                + "and needs a bundle at version \(chosenFacts.lastCompatibleVersion) or later to be read; nothing was restored or changed. "
                + "To go back, \(instead)",
            account: account.rawValue, file: chosen.path, fromVersion: chosenFacts.version, toVersion: bundle.targetVersion)
    }

    /// Replaces the account's content with the account file at `source` (a copy restored from
    /// the replica as it was at some time): the same path as a snapshot restore
    /// (``restore(_:snapshot:holding:)``), with a `before-restore` snapshot of the current file
    /// first. `source` itself is only read.
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Returns: the snapshot taken of the file it replaced; nil when there was no file.
    /// - Throws: ``AccountdError``: `accountCorrupt` when `source` is not a sound file of this
    ///   account, `accountBusy`, `storage`; the account is then unchanged.
    public func restore(_ account: AccountName, copy source: String, holding hold: AccountHold? = nil) throws -> SnapshotInfo? {
        try underLock(account, holding: hold) {
            try replaceContent(of: account, with: source, protecting: [])
        }
    }

    /// The body of both restores, under the account's lock: checks `source`, saves the current
    /// file as a snapshot, and writes `source`'s content into the account file.
    func replaceContent(of account: AccountName, with source: String, protecting: Set<String>) throws -> SnapshotInfo? {
        known.withLock { $0[account] = nil }
        let path = root.accountPath(account)
        // A link in the account's place is refused as every method refuses it, before any copy.
        if case .symlink = FileSystem.entry(at: path) {
            throw AccountdError.corrupt(
                account, path: path,
                "is a symbolic link; accountd never follows links inside the data root and restores nothing over one. Remove the link, then restore again")
        }
        _ = try AccountInspector.inspect(path: source, account: account, deep: true, busy: options.lockTimeout)
        // The snapshot of the file replaced is pruned for only once the restore succeeded, and
        // removed if it fails: a restore retried against a failing disk never pushes older
        // snapshots (the writes an earlier restore set aside) out of retention (hostile34e G1).
        var saved: SnapshotInfo?
        var inPlace = false
        if FileSystem.exists(path) {
            let readable: Bool
            do {
                _ = try AccountInspector.inspect(path: path, account: account, deep: false, busy: options.lockTimeout)
                readable = true
            } catch let error as AccountdError where error.kind == .accountBusy {
                // Another process holds the file: it is not unreadable, and is never replaced
                // under it (its writes would go to a file no longer in place).
                throw error
            } catch {
                readable = false
            }
            if readable {
                saved = try snapshots.take(account, source: path, reason: "before-restore", protecting: protecting, pruning: false)
                inPlace = true
            } else {
                saved = try snapshots.takeRaw(account, source: path, reason: "before-restore-unreadable", protecting: protecting, pruning: false)
            }
        }
        let temp = root.stagingPath(account, .restoring)
        do {
            // Whatever an interrupted restore left there (a file, a folder, a link) goes, unfollowed.
            try root.clearStaging(account, .restoring)
            do {
                try ReadOnlyFile(source).copy(to: temp)
                try Self.useWAL(temp)
                // Restored here on purpose: a handoff mark it carries is this host's no more.
                try HandoffMark.remove(temp)
                if inPlace {
                    try Self.write(temp, into: path, account: account)
                    try FileSystem.removeWithCompanions(temp)
                }
            } catch {
                try? root.clearStaging(account, .restoring)
                throw error
            }
            if !inPlace {
                for suffix in ["-wal", "-shm"] { try FileSystem.removeIfPresent(path + suffix) }
                try FileSystem.durableRename(temp, to: path)
            }
        } catch {
            // A restore over a readable file changed nothing (one transaction); over an
            // unreadable one its raw copy is kept, since its WAL may have gone.
            if inPlace, let saved { snapshots.discard(saved) }
            throw error
        }
        if let saved { try? snapshots.prune(account, keeping: protecting.union([saved.name])) }
        return saved
    }

    /// Writes the database at `source` into the account file at `path` with SQLite's backup
    /// API, in one write transaction through `path`'s WAL, keeping `path`'s Litestream tables.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the copy cannot be written; the account
    ///   file is then as it was (the transaction is rolled back).
    private static func write(_ source: String, into path: String, account: AccountName) throws {
        do {
            let target = try DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: false, label: "restore"))
            defer { try? target.close() }
            try Connections.requireFullSync(target)
            let kept = try target.read { db in try LitestreamTables.definitions(db) }
            let copy = try DatabaseQueue(path: source, configuration: Connections.configuration(foreignKeys: false, label: "restore-copy"))
            defer { try? copy.close() }
            try copy.write { db in
                let present = Set(try LitestreamTables.definitions(db))
                for sql in kept where !present.contains(sql) { try db.execute(sql: sql) }
            }
            try copy.writeWithoutTransaction { source in
                try target.writeWithoutTransaction { db in try source.backup(to: db) }
            }
        } catch {
            // SQLite's backup reports a file it may not write with another handle's words ("no
            // more rows available"): the file's own refusal says what is wrong (hostile34e G3).
            let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
            let reason = fd < 0 ? "the file cannot be written: \(String(cString: strerror(errno)))" : ErrorText.of(error)
            if fd >= 0 { _ = Glibc.close(fd) }
            throw AccountdError(
                .storage, "writing the restored copy of account \(account) into \(path) failed: \(reason); the account was not changed",
                account: account.rawValue, file: path)
        }
    }

    /// Puts the file at `path` in WAL mode and syncs it, leaving no `-wal` or `-shm` beside it.
    ///
    /// A snapshot is a rollback-journal file (see ``SnapshotStore``); an account file must be in
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
