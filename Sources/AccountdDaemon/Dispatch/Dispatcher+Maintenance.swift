import AccountdCore
import AccountdProtocol

extension Dispatcher {
    func verify(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        let report = try await service.verify(account)
        try await writer.send(Reply(parameters: VerifyResult(report).parameters))
    }

    func snapshots(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        let snapshots = try await service.snapshots(account)
        let list = SnapshotList(account: account.rawValue, snapshots: snapshots.map(SnapshotEntry.init))
        try await writer.send(Reply(parameters: list.parameters))
    }

    func restore(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        let name = try parameters.string("snapshot")
        let (restored, saved, reopened) = try await service.restore(account, snapshot: name)
        let reply = RestoreReply(
            account: account.rawValue, restored: SnapshotEntry(restored), saved: saved.map(SnapshotEntry.init),
            reopened: reopened.map { RestoreReply.Reopened(action: $0.action.rawValue, version: $0.version) })
        try await writer.send(Reply(parameters: reply.parameters))
    }

    /// `Snapshot {account, label?}`: the snapshot taken, with the keys of one `Snapshots` entry.
    func snapshot(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        var label = SnapshotLabel.manual
        if let raw = try parameters.string("label") { label = try SnapshotLabel(raw) }
        let taken = try await service.snapshot(account, label: label)
        try await writer.send(Reply(parameters: SnapshotEntry(taken).parameters))
    }

    /// `Remove {account, purge?}`: `{account, purged, snapshot?}`, the snapshot being the
    /// final `before-remove` copy (left out after a purge).
    func remove(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        let purge = try parameters.bool("purge") ?? false
        let outcome = try await service.remove(account, purge: purge)
        let reply = RemoveReply(account: account.rawValue, purged: outcome.purged, snapshot: outcome.snapshot.map(SnapshotEntry.init))
        try await writer.send(Reply(parameters: reply.parameters))
    }
}
