import AccountdProtocol
import Foundation

extension AccountStore {
    /// Restores `account` as its Litestream replica had it at `at` (`Restore {account, at}`):
    /// the replica's state is fetched into a staging file and checked
    /// (``ReplicaTimeTravel/fetch(_:at:accept:)``), then written into the account through the
    /// same path as a snapshot restore, a `before-restore` snapshot of the current file first.
    /// A time before the replica's history changes nothing.
    ///
    /// Callers must have closed their connections to the account.
    ///
    /// - Parameter reclaim: restore an account handed off from this host all the same, ending
    ///   the handoff (without it: `accountMoved`).
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Returns: what was fetched (with the time the restored state has), and the snapshot
    ///   taken of the file it replaced (nil when there was none).
    /// - Throws: ``AccountdError``: `snapshotNotFound` (before the replica's history),
    ///   `accountNotFound` (nothing in the replica), `accountTooNew`, `accountCorrupt`,
    ///   `accountBusy`, `storage`; the account is then unchanged.
    public func restore(
        _ account: AccountName, at: Date, from traveller: ReplicaTimeTravel, reclaim: Bool = false, holding hold: AccountHold? = nil
    ) throws -> (fetched: ReplicaTimeTravel.Fetched, saved: SnapshotInfo?) {
        try underLock(account, holding: hold, allowingMoved: reclaim) {
            let fetched = try traveller.fetch(account, at: at) { version, lastCompatible in
                let facts = AccountFacts(version: version, lastCompatibleVersion: lastCompatible, createdAt: nil, applied: [])
                guard isUsable(facts) else { throw tooNew(account, facts) }
            }
            defer { traveller.discard(account) }
            let saved = try replaceContent(of: account, with: fetched.path, protecting: [])
            if reclaim { try root.eraseHandoff(account) }
            return (fetched, saved)
        }
    }
}
