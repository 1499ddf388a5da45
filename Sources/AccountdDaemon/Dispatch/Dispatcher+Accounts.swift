import AccountdCore
import AccountdProtocol
import Synchronization

extension Dispatcher {
    func status(_ parameters: Parameters, writer: ReplyWriter) async throws {
        guard let account = try parameters.account() else {
            try await writer.send(Reply(parameters: service.daemonStatus()))
            return
        }
        let status = try await service.accountStatus(account)
        var reply: [(String, JSONValue)] = [
            ("account", .string(account.rawValue)), ("exists", .bool(status.exists)),
            ("version", status.version.map { JSONValue($0) } ?? .null), ("target", JSONValue(status.target)),
            ("state", .string(status.state.rawValue)), ("sizeBytes", .int(status.sizeBytes)),
            ("createdAt", JSONValue(status.createdAt)),
            ("lastMigration", status.lastMigration.map { ["version": JSONValue($0.version), "name": .string($0.name), "appliedAt": .string($0.appliedAt)] } ?? .null),
            ("editedMigrations", .array(status.editedMigrations.map(Self.json))),
        ]
        if let problem = status.problem { reply.append(("problem", .string(problem))) }
        try await writer.send(Reply(parameters: .object(reply)))
    }

    func list(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let details = try parameters.bool("details") ?? false
        let accounts = try await service.list(details: details)
        for (account, size, status) in accounts {
            var entry: [(String, JSONValue)] = [("account", .string(account.rawValue)), ("sizeBytes", .int(size))]
            if let status {
                entry.append(("version", status.version.map { JSONValue($0) } ?? .null))
                entry.append(("state", .string(status.state.rawValue)))
            }
            try await writer.send(Reply(parameters: .object(entry), continues: true))
        }
        try await writer.send(Reply(parameters: ["count": JSONValue(accounts.count)]))
    }

    func switchAccount(_ request: Request, writer: ReplyWriter) async throws {
        let account = try request.parameters.requiredAccount()
        let create = try request.parameters.bool("create") ?? true
        var progress: ProgressHandler?
        if request.more {
            try await writer.flush()
            let write = writer.blockingWrite
            progress = { step in
                let reply = Reply(
                    parameters: ["step": JSONValue(step.step), "of": JSONValue(step.of), "name": .string(step.name)], continues: true)
                try? write(Array(reply.encoded().utf8))
            }
        }
        let result = try await service.switchTo(account, create: create, progress: progress)
        let outcome = result.outcome
        try await writer.send(
            Reply(parameters: [
                "account": .string(account.rawValue), "previous": JSONValue(result.previous?.rawValue),
                "action": .string(outcome.action.rawValue), "fromVersion": outcome.fromVersion.map { JSONValue($0) } ?? .null,
                "version": JSONValue(outcome.version), "compatible": .bool(outcome.compatible),
                "durationMs": JSONValue((outcome.durationMs * 1000).rounded() / 1000),
            ]))
    }

    func migrate(_ request: Request, writer: ReplyWriter) async throws {
        let parameters = request.parameters
        let all = try parameters.bool("all") ?? false
        let names = try parameters.stringArray("accounts") ?? []
        guard all != !names.isEmpty else {
            throw ProtocolError(.invalidParameter, "Migrate takes either \"accounts\" (a non-empty list) or \"all\": true", facts: [("parameter", "accounts")])
        }
        var accounts: [AccountName] = []
        for name in names {
            do { accounts.append(try AccountName(name)) } catch {
                throw ProtocolError(.invalidAccountName, error.description, facts: [("account", .string(name))])
            }
        }
        if all { accounts = try await service.list(details: false).map(\.0) }
        try await writer.flush()

        var results: [JSONValue] = []
        var counts = ["migrated": 0, "current": 0, "failed": 0]
        let service = service
        let width = max(1, migrateConcurrency)
        try await withThrowingTaskGroup(of: JSONValue.self) { group in
            var pending = accounts[...]
            func startNext() {
                guard let account = pending.popFirst() else { return }
                group.addTask {
                    do {
                        let outcome = try await service.migrateOne(account)
                        return [
                            "account": .string(account.rawValue), "result": .string(outcome.action == .migrated ? "migrated" : "current"),
                            "fromVersion": outcome.fromVersion.map { JSONValue($0) } ?? .null, "version": JSONValue(outcome.version),
                        ]
                    } catch {
                        let reply = ErrorMapping.reply(for: error, method: .migrate, logger: logger)
                        return [
                            "account": .string(account.rawValue), "result": "failed",
                            "error": .string(reply.error?.rawValue ?? ""), "message": JSONValue(reply.message),
                        ]
                    }
                }
            }
            for _ in 0..<width { startNext() }
            while let result = try await group.next() {
                counts[result["result"]?.stringValue ?? "failed", default: 0] += 1
                if request.more {
                    try await writer.send(Reply(parameters: result, continues: true))
                    try await writer.flush()
                } else {
                    results.append(result)
                }
                startNext()
            }
        }
        var summary: [(String, JSONValue)] = [
            ("count", JSONValue(accounts.count)), ("migrated", JSONValue(counts["migrated"]!)),
            ("current", JSONValue(counts["current"]!)), ("failed", JSONValue(counts["failed"]!)),
        ]
        if !request.more { summary.append(("results", .array(results))) }
        try await writer.send(Reply(parameters: .object(summary)))
    }

    static func json(_ edited: EditedMigration) -> JSONValue {
        [
            "version": JSONValue(edited.version), "name": .string(edited.name), "appliedSha256": .string(edited.appliedSHA256),
            "bundleSha256": .string(edited.bundleSHA256),
        ]
    }

    static func json(_ snapshot: SnapshotInfo) -> JSONValue {
        [
            "snapshot": .string(snapshot.name), "version": JSONValue(snapshot.version), "createdAt": .string(snapshot.createdAt),
            "sizeBytes": .int(snapshot.sizeBytes),
        ]
    }
}
