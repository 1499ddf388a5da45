import AccountdCore
import AccountdProtocol

extension Dispatcher {
    /// `Snapshots {account}`: the account's snapshots.
    func snapshots(_ account: AccountName) async throws -> Reply {
        let snapshots = try await services.maintenance.snapshots(account)
        return Reply(SnapshotList(account: account.rawValue, snapshots: snapshots.map(SnapshotEntry.init)))
    }

    /// `Restore {account, snapshot?, reclaim?}`: what was restored, and the snapshot of what it replaced.
    func restore(_ account: AccountName, snapshot: String?, reclaim: Bool = false) async throws -> Reply {
        let done = try await services.maintenance.restore(account, snapshot: snapshot, reclaim: reclaim)
        let reply = RestoreReply(
            account: account.rawValue, restored: SnapshotEntry(done.restored), saved: done.saved.map(SnapshotEntry.init),
            reopened: done.reopened)
        return Reply(reply)
    }

    /// `Restore {account, at}`: the account as the replica had it then, with `restoredFrom` and
    /// the time the restored state has.
    func restore(_ account: AccountName, at: ReplicaTime, reclaim: Bool = false) async throws -> Reply {
        let done = try await services.maintenance.restore(account, at: at, reclaim: reclaim)
        let reply = RestoreReply(
            account: account.rawValue, restored: done.restored, saved: done.saved.map(SnapshotEntry.init), reopened: done.reopened,
            restoredFrom: "replica", at: done.at)
        return Reply(reply)
    }

    /// `Remove {account, purge?}`: `{account, purged, snapshot?}`, the snapshot being the
    /// final `before-remove` copy (left out after a purge).
    /// With `handoff`, the reply says `handoff: true`. `caller`'s own active account is refused.
    func remove(_ account: AccountName, purge: Bool, handoff: Bool = false, caller: UInt32) async throws -> Reply {
        let outcome = try await services.maintenance.remove(account, purge: purge, handoff: handoff, caller: caller)
        return Reply(
            RemoveReply(account: account.rawValue, purged: outcome.purged, snapshot: outcome.snapshot.map(SnapshotEntry.init), handoff: handoff))
    }

    /// Streams the export in pieces of 256 KiB (``ReplySink``), a piece per pool job, then
    /// its totals; the grant is asked again before each piece.
    func export(_ account: AccountName, format: ExportFormat, peer: PeerCredentials, writer: ReplyWriter) async throws -> Reply {
        try await writer.flush()
        let allowed: @Sendable () throws -> Void = { [self] in try check(.read(account), for: .export, peer: peer) }
        let summary = try await services.maintenance.export(
            account, format: format, uid: peer.uid, to: replyStream(writer), shares: services.data.shares, allowed: allowed)
        return Reply(ExportTotals(summary, format: format))
    }
}
