import AccountdCore
import AccountdProtocol

extension Dispatcher {
    /// `Snapshots {account}`: the account's snapshots.
    func snapshots(_ account: AccountName) async throws -> Reply {
        let snapshots = try await services.maintenance.snapshots(account)
        return Reply(SnapshotList(account: account.rawValue, snapshots: snapshots.map(SnapshotEntry.init)))
    }

    /// `Restore {account, snapshot?}`: what was restored, and the snapshot of what it replaced.
    func restore(_ account: AccountName, snapshot: String?) async throws -> Reply {
        let done = try await services.maintenance.restore(account, snapshot: snapshot)
        let reply = RestoreReply(
            account: account.rawValue, restored: SnapshotEntry(done.restored), saved: done.saved.map(SnapshotEntry.init),
            reopened: done.reopened)
        return Reply(reply)
    }

    /// `Remove {account, purge?}`: `{account, purged, snapshot?}`, the snapshot being the
    /// final `before-remove` copy (left out after a purge).
    func remove(_ account: AccountName, purge: Bool) async throws -> Reply {
        let outcome = try await services.maintenance.remove(account, purge: purge)
        return Reply(RemoveReply(account: account.rawValue, purged: outcome.purged, snapshot: outcome.snapshot.map(SnapshotEntry.init)))
    }

    /// Streams the export in writes of 256 KiB (``ReplySink``), then its totals.
    func export(_ account: AccountName, format: ExportFormat, writer: ReplyWriter) async throws -> Reply {
        try await writer.flush()
        let summary = try await services.maintenance.export(account, format: format, write: writer.blockingWrite)
        return Reply(ExportTotals(summary, format: format))
    }
}
