import AccountdProtocol
import Foundation
import GRDB

extension AccountStore {
    /// Removes an account, under its lock (or `hold`, the account's hold taken before).
    ///
    /// Without `purge`, a final `before-remove` snapshot is taken (kept under the usual
    /// retention, and restorable: ``restore(_:snapshot:holding:)`` brings the account back), then the
    /// file and its `-wal`/`-shm` go. With `purge`, no snapshot is taken: the file, every
    /// snapshot, the snapshot folder, any temporary file of the account and Litestream's local
    /// state of it (``DataRoot/litestreamStatePath(_:)``) under the data root go, which is how
    /// an account is erased on request (a replica off the host is the operator's to erase). A purge also erases what is left of
    /// an account that was removed before (its snapshots).
    ///
    /// - Parameter prepare: runs under the account's lock before anything is changed: the
    ///   daemon closes its handles on the file there and refuses the active account. What it
    ///   throws ends the removal with nothing changed.
    /// - Throws: ``AccountdError``: `accountNotFound` when there is nothing of the account to
    ///   remove, `accountBusy`, `storage`, or what `prepare` throws.
    public func remove(
        _ account: AccountName, purge: Bool, holding hold: AccountHold? = nil, prepare: () throws -> Void = {}
    ) throws -> RemoveOutcome {
        try underLock(account, holding: hold) {
            let path = root.accountPath(account)
            let hasFile = FileSystem.entry(at: path) != .missing
            let hasSnapshots = FileSystem.exists(root.snapshotDirectory(account))
            guard hasFile || (purge && hasSnapshots) else {
                let hint =
                    hasSnapshots
                    ? "; its snapshots remain: 'accountctl restore \(account)' brings it back, 'accountctl remove \(account) --purge' erases them"
                    : ""
                throw AccountdError(.accountNotFound, "account \(account) has no file to remove\(hint)", account: account.rawValue, file: path)
            }
            try prepare()
            known.withLock { $0[account] = nil }
            checked.withLock { $0[account] = nil }
            var outcome = RemoveOutcome(account: account, purged: purge, snapshot: nil, snapshotsErased: 0)
            if !purge {
                let readable = (try? AccountInspector.inspect(path: path, account: account, deep: false)) != nil
                outcome.snapshot =
                    try readable
                    ? snapshots.take(account, source: path, reason: "before-remove")
                    : snapshots.takeRaw(account, source: path, reason: "before-remove-unreadable")
            }
            try FileSystem.removeWithCompanions(path)
            if purge {
                for staging in DataRoot.Staging.allCases { try FileSystem.removeWithCompanions(root.stagingPath(account, staging)) }
                let temporary = (try? FileManager.default.contentsOfDirectory(atPath: root.temporaryDirectory)) ?? []
                for file in temporary where Exporter.isStagedCopy(file, of: account) {
                    try FileSystem.removeWithCompanions(root.temporaryDirectory + "/" + file)
                }
                try FileSystem.removeTreeIfPresent(root.litestreamStatePath(account))
                outcome.snapshotsErased = try snapshots.removeAll(account)
            }
            try FileSystem.fsyncDirectory(root.accountsDirectory)
            return outcome
        }
    }
}
