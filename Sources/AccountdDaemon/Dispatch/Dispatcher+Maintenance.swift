import AccountdCore
import AccountdProtocol

extension Dispatcher {
    func verify(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        let report = try await service.verify(account)
        try await writer.send(
            Reply(parameters: [
                "account": .string(account.rawValue), "healthy": .bool(report.isHealthy),
                "integrity": .string(report.integrity.joined(separator: "; ")),
                "foreignKeys": .array(report.foreignKeys.map { .string($0) }),
                "schema": .array(report.schema.map { .string($0) }),
                "editedMigrations": .array(report.editedMigrations.map(Self.json)),
            ]))
    }

    func snapshots(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        let snapshots = try await service.snapshots(account)
        try await writer.send(
            Reply(parameters: ["account": .string(account.rawValue), "snapshots": .array(snapshots.map(Self.json))]))
    }

    func restore(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        let name = try parameters.string("snapshot")
        let (restored, saved, reopened) = try await service.restore(account, snapshot: name)
        var reply: [(String, JSONValue)] = [
            ("account", .string(account.rawValue)), ("restored", Self.json(restored)), ("saved", saved.map(Self.json) ?? .null),
        ]
        if let reopened {
            reply.append(("action", .string(reopened.action.rawValue)))
            reply.append(("version", JSONValue(reopened.version)))
        }
        try await writer.send(Reply(parameters: .object(reply)))
    }

    /// `Snapshot {account, label?}`: the snapshot taken, with the keys of one `Snapshots` entry.
    func snapshot(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        var label = SnapshotLabel.manual
        if let raw = try parameters.string("label") { label = try SnapshotLabel(raw) }
        let taken = try await service.snapshot(account, label: label)
        try await writer.send(Reply(parameters: Self.json(taken)))
    }

    /// `Remove {account, purge?}`: `{account, purged, snapshot?}`, the snapshot being the
    /// final `before-remove` copy (left out after a purge).
    func remove(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let account = try parameters.requiredAccount()
        let purge = try parameters.bool("purge") ?? false
        let outcome = try await service.remove(account, purge: purge)
        var reply: [(String, JSONValue)] = [("account", .string(account.rawValue)), ("purged", .bool(outcome.purged))]
        if let snapshot = outcome.snapshot { reply.append(("snapshot", Self.json(snapshot))) }
        try await writer.send(Reply(parameters: .object(reply)))
    }
}
