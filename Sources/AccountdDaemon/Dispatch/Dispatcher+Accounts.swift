import AccountdCore
import AccountdProtocol

extension Dispatcher {
    func status(_ account: AccountName?, writer: ReplyWriter) async throws {
        guard let account else {
            try await writer.send(Reply(services.switching.daemonStatus()))
            return
        }
        try await writer.send(Reply(AccountStatusReply(try await services.switching.accountStatus(account))))
    }

    func list(details: Bool, writer: ReplyWriter) async throws {
        let accounts = try await services.switching.list(details: details)
        for (account, size, status) in accounts {
            let entry = ListEntry(
                account: account.rawValue, sizeBytes: size,
                details: status.map { ListEntry.Details(version: $0.version, state: $0.state.rawValue) })
            try await writer.send(Reply(entry, continues: true))
        }
        try await writer.send(Reply(ListSummary(count: accounts.count)))
    }

    func switchAccount(_ account: AccountName, create: Bool, more: Bool, writer: ReplyWriter) async throws {
        var progress: ProgressHandler?
        if more {
            try await writer.flush()
            let write = writer.blockingWrite
            progress = { step in
                let reply = Reply(SwitchProgress(step: step.step, of: step.of, name: step.name), continues: true)
                try? write(Array(reply.encoded().utf8))
            }
        }
        let switched = try await services.switching.switchTo(account, create: create, progress: progress)
        let outcome = switched.outcome
        let reply = SwitchResult(
            account: account.rawValue, previous: switched.previous?.rawValue, action: outcome.action.rawValue,
            fromVersion: outcome.fromVersion, version: outcome.version, compatible: outcome.compatible,
            durationMs: (outcome.durationMs * 1000).rounded() / 1000)
        try await writer.send(Reply(reply))
    }

    /// Migrates the accounts `migrateConcurrency` at a time; with `more`, one reply per
    /// account as each finishes. A failed account never stops the others.
    func migrate(_ target: MigrateTarget, more: Bool, writer: ReplyWriter) async throws {
        let switching = services.switching
        let accounts: [AccountName] =
            switch target {
            case .all: try await switching.list(details: false).map(\.0)
            case .accounts(let names): names
            }
        try await writer.flush()

        var results: [MigrateResult] = []
        var counts = ["migrated": 0, "current": 0, "failed": 0]
        let dispatcher = self
        try await withThrowingTaskGroup(of: MigrateResult.self) { group in
            var pending = accounts[...]
            func startNext() {
                guard let account = pending.popFirst() else { return }
                group.addTask {
                    do {
                        let outcome = try await switching.migrateOne(account)
                        return MigrateResult(
                            account: account.rawValue,
                            outcome: .done(
                                result: outcome.action == .migrated ? "migrated" : "current", fromVersion: outcome.fromVersion,
                                version: outcome.version))
                    } catch {
                        let reply = dispatcher.reply(for: error, method: .migrate)
                        return MigrateResult(
                            account: account.rawValue, outcome: .failed(error: reply.error?.rawValue ?? "", message: reply.message))
                    }
                }
            }
            for _ in 0..<max(1, migrateConcurrency) { startNext() }
            while let result = try await group.next() {
                counts[result.result, default: 0] += 1
                if more {
                    try await writer.send(Reply(result, continues: true))
                    try await writer.flush()
                } else {
                    results.append(result)
                }
                startNext()
            }
        }
        let summary = MigrateSummary(
            count: accounts.count, migrated: counts["migrated"] ?? 0, current: counts["current"] ?? 0, failed: counts["failed"] ?? 0,
            results: more ? nil : results)
        try await writer.send(Reply(summary))
    }
}
