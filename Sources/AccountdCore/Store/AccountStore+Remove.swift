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
    /// A purge is all or nothing (``AccountPurge``): everything of the account is first moved
    /// aside by renames inside the data root, then deleted; what a failed purge, pull,
    /// creation or restore left behind is erased by the next purge, whatever it is. Nothing is
    /// ever removed through a link: an account whose file or folders are links is refused with
    /// `accountCorrupt`, nothing changed.
    ///
    /// - Parameter prepare: runs under the account's lock before anything is changed: the
    ///   daemon closes its handles on the file there and refuses the active account. What it
    ///   throws ends the removal with nothing changed.
    /// - Throws: ``AccountdError``: `accountNotFound` when there is nothing of the account to
    ///   remove, `accountCorrupt` when its file or a folder of it is a link, `accountBusy`,
    ///   `storage`, or what `prepare` throws.
    ///
    /// A purge of an account handed off from this host erases the record of the handoff
    /// too; a removal without purge of such an account is refused (`accountMoved`), unless
    /// `handingOff` (the handoff itself, which wrote the record under the same lock).
    public func remove(
        _ account: AccountName, purge: Bool, handingOff: Bool = false, holding hold: AccountHold? = nil, prepare: () throws -> Void = {}
    ) throws -> RemoveOutcome {
        try underLock(account, holding: hold, allowingMoved: purge || handingOff) {
            let onlyTheRecord = try purge && root.isHandedOff(account) && FileSystem.entry(at: root.accountPath(account)) == .missing
                && root.snapshotFolder(account) == nil
            if onlyTheRecord {
                // Nothing of it is left here but the record: the purge erases that.
                try prepare()
                try root.eraseHandoff(account)
                return RemoveOutcome(account: account, purged: true, snapshot: nil, snapshotsErased: 0)
            }
            let path = root.accountPath(account)
            let accounts = try root.accountsFolder(for: account)
            let file = account.rawValue + ".sqlite"
            switch accounts?.entry(file) ?? .missing {
            case .symlink:
                throw AccountdError.corrupt(
                    account, path: path, "is a symbolic link; accountd never follows links inside the data root and removes nothing through one")
            case .directory, .other:
                throw AccountdError.corrupt(account, path: path, "is not a regular file; accountd removes nothing that is not its own file")
            case .missing, .regularFile:
                break
            }
            let hasFile = accounts?.entry(file) != .missing
            let hasSnapshots = try root.snapshotFolder(account) != nil
            let purging = AccountPurge(root: root, account: account)
            guard try hasFile || (purge && (hasSnapshots || purging.hasLeftovers(accounts: accounts))) else {
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
            if purge {
                outcome.snapshotsErased = try purging.run(accounts: accounts)
                try root.eraseHandoff(account)
                return outcome
            }
            let readable = (try? AccountInspector.inspect(path: path, account: account, deep: false)) != nil
            outcome.snapshot =
                try readable
                ? snapshots.take(account, source: path, reason: "before-remove")
                : snapshots.takeRaw(account, source: path, reason: "before-remove-unreadable")
            if let accounts {
                for suffix in ["", "-wal", "-shm", "-journal"] { try accounts.remove(file + suffix) }
                try accounts.sync()
            }
            return outcome
        }
    }
}
