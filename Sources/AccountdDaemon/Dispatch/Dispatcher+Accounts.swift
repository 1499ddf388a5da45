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
        try await writer.send(Reply(parameters: AccountStatusReply(status).parameters))
    }

    func list(_ parameters: Parameters, writer: ReplyWriter) async throws {
        let details = try parameters.bool("details") ?? false
        let accounts = try await service.list(details: details)
        for (account, size, status) in accounts {
            let entry = ListEntry(
                account: account.rawValue, sizeBytes: size,
                details: status.map { ListEntry.Details(version: $0.version, state: $0.state.rawValue) })
            try await writer.send(Reply(parameters: entry.parameters, continues: true))
        }
        try await writer.send(Reply(parameters: ListSummary(count: accounts.count).parameters))
    }

    func switchAccount(_ request: Request, writer: ReplyWriter) async throws {
        let account = try request.parameters.requiredAccount()
        let create = try request.parameters.bool("create") ?? true
        var progress: ProgressHandler?
        if request.more {
            try await writer.flush()
            let write = writer.blockingWrite
            progress = { step in
                let reply = Reply(parameters: SwitchProgress(step: step.step, of: step.of, name: step.name).parameters, continues: true)
                try? write(Array(reply.encoded().utf8))
            }
        }
        let result = try await service.switchTo(account, create: create, progress: progress)
        let outcome = result.outcome
        let reply = SwitchResult(
            account: account.rawValue, previous: result.previous?.rawValue, action: outcome.action.rawValue,
            fromVersion: outcome.fromVersion, version: outcome.version, compatible: outcome.compatible,
            durationMs: (outcome.durationMs * 1000).rounded() / 1000)
        try await writer.send(Reply(parameters: reply.parameters))
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

        var results: [MigrateResult] = []
        var counts = ["migrated": 0, "current": 0, "failed": 0]
        let service = service
        let width = max(1, migrateConcurrency)
        try await withThrowingTaskGroup(of: MigrateResult.self) { group in
            var pending = accounts[...]
            func startNext() {
                guard let account = pending.popFirst() else { return }
                group.addTask {
                    do {
                        let outcome = try await service.migrateOne(account)
                        return MigrateResult(
                            account: account.rawValue,
                            outcome: .done(
                                result: outcome.action == .migrated ? "migrated" : "current", fromVersion: outcome.fromVersion,
                                version: outcome.version))
                    } catch {
                        let reply = ErrorMapping.reply(for: error, method: .migrate, logger: logger)
                        return MigrateResult(
                            account: account.rawValue, outcome: .failed(error: reply.error?.rawValue ?? "", message: reply.message))
                    }
                }
            }
            for _ in 0..<width { startNext() }
            while let result = try await group.next() {
                counts[result.result, default: 0] += 1
                if request.more {
                    try await writer.send(Reply(parameters: result.parameters, continues: true))
                    try await writer.flush()
                } else {
                    results.append(result)
                }
                startNext()
            }
        }
        let summary = MigrateSummary(
            count: accounts.count, migrated: counts["migrated"] ?? 0, current: counts["current"] ?? 0, failed: counts["failed"] ?? 0,
            results: request.more ? nil : results)
        try await writer.send(Reply(parameters: summary.parameters))
    }
}
