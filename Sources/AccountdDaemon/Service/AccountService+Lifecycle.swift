import AccountdCore
import AccountdProtocol
import Foundation

extension AccountService {
    /// Takes a snapshot of `account` now (`Snapshot`), on a pool thread.
    ///
    /// - Throws: `AccountNotFound`, `AccountCorrupt`, `AccountBusy` or a storage error.
    func snapshot(_ account: AccountName, label: SnapshotLabel) async throws -> SnapshotInfo {
        let store = store
        let taken = try await pool.run { try store.takeSnapshot(account, label: label) }
        logger.notice(
            "account \(account): snapshot \(taken.name) taken on request (version \(taken.version), \(taken.sizeBytes) bytes)",
            metadata: ["account": "\(account)"])
        return taken
    }

    /// Removes `account` (`Remove`): its file, after a final snapshot, or with `purge`
    /// everything of it under the data root.
    ///
    /// Under the account's lock, the active account is refused and the account's open
    /// preference table is closed before a byte changes. With `purge`, copies staged by an
    /// export of the account are erased too.
    ///
    /// - Throws: `AccountActive`, `AccountNotFound`, `AccountBusy` or a storage error.
    func remove(_ account: AccountName, purge: Bool) async throws -> RemoveOutcome {
        let store = store
        let preferences = preferences
        let temporaryDirectory = root.temporaryDirectory
        let outcome = try await pool.run { [self] in
            var marked = false
            defer { if marked { endRemoval(account) } }
            let outcome = try store.remove(account, purge: purge) {
                try beginRemoval(account)
                marked = true
                preferences.close(account)
            }
            if purge {
                for file in (try? FileManager.default.contentsOfDirectory(atPath: temporaryDirectory)) ?? [] where Exporter.isStagedCopy(file, of: account) {
                    try? FileManager.default.removeItem(atPath: temporaryDirectory + "/" + file)
                }
            }
            return outcome
        }
        if purge {
            logger.notice(
                "account \(account) purged: its file and \(outcome.snapshotsErased) snapshot(s) were erased",
                metadata: ["account": "\(account)"])
        } else {
            logger.notice(
                "account \(account) removed; its last state was kept as snapshot \(outcome.snapshot?.name ?? "none")",
                metadata: ["account": "\(account)"])
        }
        return outcome
    }
}
