import AccountdProtocol
import Foundation

extension AccountStore {
    /// Restores `account` as its Litestream replica had it at `at` (`Restore {account, at}`):
    /// the replica's state is fetched into a staging file and checked
    /// (``ReplicaTimeTravel/fetch(_:at:on:accept:)``), then written into the account through the
    /// same path as a snapshot restore, a `before-restore` snapshot of the current file first.
    /// A time before the replica's history changes nothing.
    ///
    /// The account stays locked by `hold` throughout: Litestream is awaited under it (no
    /// thread waits for Litestream), and every file step runs on `blocking` under it.
    /// Callers must have closed their connections to the account.
    ///
    /// - Parameter reclaim: restore an account handed off from this host all the same, ending
    ///   the handoff (without it: `accountMoved`, before Litestream runs).
    /// - Parameter hold: the account's hold, taken before and kept until this returns.
    /// - Returns: what was fetched (with the time the restored state has), and the snapshot
    ///   taken of the file it replaced (nil when there was none).
    /// - Throws: ``AccountdError``: `snapshotNotFound` (before the replica's history),
    ///   `accountNotFound` (nothing in the replica), `accountTooNew`, `accountCorrupt`,
    ///   `accountMoved`, `storage`; the account is then unchanged.
    public func restore(
        _ account: AccountName, at: Date, from traveller: ReplicaTimeTravel, reclaim: Bool = false, holding hold: AccountHold,
        on blocking: some BlockingRunner
    ) async throws -> (fetched: ReplicaTimeTravel.Fetched, saved: SnapshotInfo?) {
        // A linked folder or a handoff is refused before Litestream runs, as under the lock; and
        // an account with no file here (a rebuilt host) is brought back by a pull, which checks
        // the replica's handoff mark, not by a restore at a time, unless reclaimed (hostile33g #1).
        try await blocking.run {
            try self.underLock(account, holding: hold, allowingMoved: reclaim) {
                guard reclaim || FileSystem.entry(at: self.root.accountPath(account)) != .missing else {
                    throw AccountdError(
                        .accountNotFound,
                        "account \(account) has no file here, so there is nothing to restore at a time: bring it back with 'accountctl pull \(account)' "
                            + "(it refuses a copy handed off to another host), then restore it at the time; or restore it from the replica at that time "
                            + "anyway with --reclaim, whatever another host holds. Nothing was changed",
                        account: account.rawValue, file: self.root.accountPath(account))
                }
            }
        }
        let fetched = try await traveller.fetch(account, at: at, on: blocking) { [self] version, lastCompatible in
            let facts = AccountFacts(version: version, lastCompatibleVersion: lastCompatible, createdAt: nil, applied: [])
            guard isUsable(facts) else { throw tooNew(account, facts) }
        }
        return try await blocking.run {
            defer { traveller.discard(account) }
            return try self.underLock(account, holding: hold, allowingMoved: reclaim) {
                let saved = try self.replaceContent(of: account, with: fetched.path, protecting: [])
                if reclaim { try self.root.eraseHandoff(account) }
                return (fetched, saved)
            }
        }
    }
}
