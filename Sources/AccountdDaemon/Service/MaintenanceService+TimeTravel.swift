import AccountdCore
import AccountdProtocol
import Foundation

extension MaintenanceService {
    /// What a restore from the replica did.
    struct ReplicaRestored: Sendable {
        /// The replica's state as restored: `replica` as its name, its version, size and time.
        var restored: SnapshotEntry
        /// The replaced file, kept as a snapshot; nil when there was no file.
        var saved: SnapshotInfo?
        /// For the active account: how it was opened again, or why it could not be.
        var reopened: RestoreReply.Reopened?
        /// The time the restored state has (RFC 3339).
        var at: String
    }

    /// Restores `account` as its Litestream replica had it at `time` (`Restore {account, at}`),
    /// through the same path as a snapshot restore; an active account is opened again at once.
    ///
    /// The whole restore runs under the account's hold: `litestream restore` into a staging
    /// file (awaited; no thread waits for Litestream), then on a pool thread the checks, the
    /// `before-restore` snapshot, the write. Litestream goes on replicating the file: the
    /// restore is one more transaction in its WAL.
    ///
    /// - Returns: what was restored, and the time the state has.
    /// - Throws: `InvalidRequest` when replication is off; `SnapshotNotFound` when `time` is
    ///   before the replica's history (naming the earliest time there is); `AccountNotFound`,
    ///   `AccountTooNew`, `AccountCorrupt`, `AccountBusy` or a storage error. The account is then unchanged.
    func restore(_ account: AccountName, at time: ReplicaTime, reclaim: Bool = false) async throws -> ReplicaRestored {
        let (store, preferences, traveller) = (stores.current, preferences, try replication.timeTraveller())
        let asked = Date(timeIntervalSince1970: time.secondsSince1970)
        let (fetched, saved) = try await store.withHold(account) { hold in
            await preferences.close(account)
            return try await store.restore(account, at: asked, from: traveller, reclaim: reclaim, holding: hold, on: pool)
        }
        if saved != nil { metrics.snapshot(.restore) }
        let at = LitestreamTime.format(fetched.at)
        let size = (try? FileManager.default.attributesOfItem(atPath: store.root.accountPath(account)))?[.size] as? NSNumber
        let restored = SnapshotEntry(snapshot: "replica", version: fetched.version, createdAt: at, sizeBytes: size?.int64Value ?? 0)
        let replaced = saved.map { "the replaced file was kept as snapshot \($0.name)" } ?? "it had no file to replace"
        logger.notice(
            "account \(account) restored from the replica \(traveller.replica.redacted) as it was at \(at) (asked: \(time.text); version \(fetched.version), Litestream txid \(fetched.txid ?? "unknown")); \(replaced)",
            metadata: ["account": "\(account)"])
        let reopened = await reopen(account, restoredFrom: "the replica at \(at)", version: fetched.version)
        return ReplicaRestored(restored: restored, saved: saved, reopened: reopened, at: at)
    }
}
