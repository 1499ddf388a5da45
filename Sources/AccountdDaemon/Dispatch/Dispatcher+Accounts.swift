import AccountdCore
import AccountdProtocol
import Foundation

extension Dispatcher {
    /// `List`: the accounts `peer` may read (every one for an admin).
    func list(details: Bool, peer: PeerCredentials, writer: ReplyWriter) async throws -> Reply {
        let entries = try await services.switching.list(details: details, include: readable(by: peer))
        for entry in entries {
            try await writer.send(Reply(entry, continues: true))
        }
        return Reply(ListSummary(count: entries.count))
    }

    /// `Switch`: makes `account` the active account of `peer`'s uid, the caller's.
    func switchAccount(_ account: AccountName, create: Bool, peer: PeerCredentials, more: Bool, writer: ReplyWriter) async throws -> Reply {
        var progress: ProgressHandler?
        if more {
            try await writer.flush()
            progress = { step in
                writer.post(Reply(SwitchProgress(step: step.step, of: step.of, name: step.name), continues: true))
            }
        }
        let switched = try await services.switching.switchTo(account, create: create, uid: peer.uid, progress: progress)
        // A reload judges whether the caller may still read it with the credentials it switched with.
        services.switching.noteSwitcher(peer, of: account)
        let outcome = switched.outcome
        let reply = SwitchResult(
            account: account.rawValue, previous: switched.previous?.rawValue, action: outcome.action.rawValue,
            fromVersion: outcome.fromVersion, version: outcome.version, compatible: outcome.compatible,
            durationMs: (outcome.durationMs * 1000).rounded() / 1000, path: services.switching.root.accountPath(account))
        return Reply(reply)
    }

    /// Migrates the accounts `migrateConcurrency` at a time, staged as `rollout` says (its
    /// canary accounts first, its excluded ones left out, missing ones created with
    /// `create`, or the release rolled back with `rollbackTo`); with `more`, one reply per
    /// account as each finishes. A failed account stops the others only through the
    /// rollout's bounds; the accounts then not begun are `skipped`.
    func migrate(_ target: MigrateTarget, rollout: MigrateRollout, more: Bool, writer: ReplyWriter) async throws -> Reply {
        let switching = services.switching
        if let version = rollout.rollbackTo { try RollBack.check(to: version, bundleVersion: services.stores.current.targetVersion) }
        let named: [AccountName] =
            switch target {
            case .all: try await switching.accountNames()
            case .accounts(let names):
                // Each account once, in the order first named: a name given twice is one account.
                names.reduce(into: (seen: Set<AccountName>(), kept: [AccountName]())) { if $0.seen.insert($1).inserted { $0.kept.append($1) } }.kept
            }
        try await refuseMissingCanary(rollout)
        let (accounts, canary) = rollout.ordered(named)
        var staged = rollout
        staged.canary = canary
        try await writer.flush()

        var results: [MigrateResult] = []
        var tally = MigrateTally(count: accounts.count)
        var gate = RolloutGate(staged, concurrency: max(1, migrateConcurrency))
        var pending = accounts[...]
        // A result goes out as soon as it is known; the skipped ones, known all at once, together.
        func report(_ result: MigrateResult, now: Bool = true) async throws {
            tally.add(result)
            if more {
                try await writer.send(Reply(MigrateResult(account: result.account, outcome: result.outcome, of: accounts.count), continues: true))
                if now { try await writer.flush() }
            } else {
                results.append(result)
            }
        }
        let dispatcher = self
        // A reload that withdraws this bundle (its release put back) stops the rollout: the
        // migrations running roll back, and no further account begins. A rollback stops
        // likewise at a reload that puts a bundle newer than its version in force (each
        // account it restored would be migrated again: hostile34e G5).
        let store = services.stores.current
        func checkWithdrawn() {
            if let version = rollout.rollbackTo {
                if services.stores.current.targetVersion > version { gate.withdraw() }
            } else if store.isWithdrawn {
                gate.withdraw()
            }
        }
        try await withThrowingTaskGroup(of: MigrateResult.self) { group in
            func startWhatMay() {
                checkWithdrawn()
                while gate.mayStart, let account = pending.popFirst() {
                    gate.started()
                    group.addTask { await dispatcher.migrateOne(account, rollout: rollout, with: switching) }
                }
            }
            startWhatMay()
            while let result = try await group.next() {
                checkWithdrawn()
                // An interrupted migration is not the account's failure: it counts toward no bound.
                gate.finished(failed: result.result == "failed" && !result.interrupted)
                try await report(result)
                startWhatMay()
            }
        }
        for account in pending { try await report(MigrateResult(account: account.rawValue, outcome: .skipped), now: false) }
        if accounts.count >= Self.trimAfter {
            try await writer.flush()
            Malloc.trim()
        }
        var summary = tally.summary(stopped: gate.stopped, results: more ? nil : results)
        if gate.stopped == .withdrawn {
            (summary.withdrawnVersion, summary.bundleVersion) = (store.targetVersion, services.stores.current.targetVersion)
            let why =
                rollout.rollbackTo.map { "a reload put bundle version \(services.stores.current.targetVersion) in force while it rolled back to version \($0)" }
                ?? "a reload withdrew bundle version \(store.targetVersion) while it ran (now serving \(services.stores.current.targetVersion))"
            logger.warning("Migrate stopped: \(why); \(tally.count - pending.count) account(s) begun, \(pending.count) not begun")
        }
        return Reply(summary)
    }

    /// Refuses, before anything is migrated, a canary that names an account with no file (and
    /// no `create` to make it): it would fail as `AccountNotFound` and stop the rollout after the
    /// canary's other accounts were migrated, for a typo.
    private func refuseMissingCanary(_ rollout: MigrateRollout) async throws {
        guard !rollout.create, !rollout.canaryAccounts.isEmpty else { return }
        let root = services.switching.root
        let wanted = rollout.canaryAccounts.filter { !rollout.exclude.contains($0) }
        let missing = try await services.pool.run { wanted.filter { !FileManager.default.fileExists(atPath: root.accountPath($0)) } }
        guard let first = missing.first else { return }
        throw AccountdError(
            .accountNotFound,
            "the canary names \(missing.map(\.rawValue).joined(separator: ", ")), which has no account file here; nothing was migrated. "
                + "Name existing accounts in canaryAccounts (accountctl list), or add create to make them",
            account: first.rawValue)
    }

    /// How many accounts a `Migrate` takes before the memory it freed is handed back to the system.
    static let trimAfter = 1000

    /// Migrates (creates, or rolls back) one account for `Migrate`: its result, a failure included.
    private func migrateOne(_ account: AccountName, rollout: MigrateRollout, with switching: SwitchService) async -> MigrateResult {
        do {
            if let version = rollout.rollbackTo {
                return try await RollBack(maintenance: services.maintenance, logger: logger).account(account, to: version)
            }
            let outcome = try await switching.migrateOne(account, create: rollout.create)
            let result =
                switch outcome.action {
                case .migrated: "migrated"
                case .created: "created"
                case .opened: "current"
                }
            return MigrateResult(
                account: account.rawValue, outcome: .done(result: result, fromVersion: outcome.fromVersion, version: outcome.version))
        } catch let error as AccountdError where error.isWithdrawnBeforeOpen {
            // Never begun: a reload withdrew the bundle while it waited its turn (for the
            // account's hold, say), and its file is as it was.
            logger.notice("\(error.message)", metadata: ["account": "\(account)", "operation": "Migrate"])
            return MigrateResult(account: account.rawValue, outcome: .skipped)
        } catch {
            let reply = ErrorMapping.reply(for: error, method: .migrate, logger: logger)
            var result = MigrateResult(account: account.rawValue, outcome: .failed(error: reply.error?.rawValue ?? "", message: reply.message))
            result.interrupted = (error as? AccountdError)?.isWithdrawnMigration == true
            return result
        }
    }
}
