import AccountdCore
import AccountdProtocol
import Foundation
import Logging

/// The work on one account's file that is not switching: `Verify`, `Plan`, `Snapshots`,
/// `Snapshot`, `Restore`, `Remove` and `Export`.
///
/// Every file is reached through the store, under the account's lock, on a pool thread.
/// The lock is waited for in the request's task, before a pool thread is taken.
struct MaintenanceService: Sendable {
    let stores: Reloadable<AccountStore>
    let switching: SwitchService
    let preferences: PreferenceService
    let pool: BlockingPool
    let metrics: DaemonMetrics
    /// Lets Litestream sync an account a last time before its file goes.
    let replication: ReplicationService
    let logger: Logger
    /// The copies `Export sqlite` stages, bounded per uid and in all.
    var staged = StagedExports(perUid: 2, total: 8)

    /// The full check of `account` (`Verify`), which the views then follow: a file found
    /// damaged (its header, or SQLite's integrity check) is recorded `corrupt`, as an open that
    /// found it would record it, and a file found sound clears a record saying it was damaged
    /// or unreadable (``AccountFailures/fileFoundSound(_:on:logger:)``).
    func verify(_ account: AccountName) async throws -> VerifyReport {
        let store = stores.current
        let failures = switching.failedAccounts
        let report: VerifyReport
        do {
            report = try await store.withHold(account) { hold in try await pool.run { try store.verify(account, holding: hold) } }
        } catch let error as AccountdError where error.kind == .accountCorrupt {
            await failures.failed(account, error: error, bundle: store.bundle.fingerprint, on: pool, logger: logger)
            throw error
        }
        if report.integrity != ["ok"] {
            let damage = AccountdError.corrupt(
                account, path: store.root.accountPath(account), "fails SQLite's integrity check (accountctl verify \(account)): \(report.integrity.prefix(3).joined(separator: "; "))")
            await failures.failed(account, error: damage, bundle: store.bundle.fingerprint, on: pool, logger: logger)
        } else if report.readableByBundle {
            await failures.fileFoundSound(account, on: pool, logger: logger)
        }
        return report
    }

    /// The SQL that would bring `account` to the bundle's version (`Plan`); changes nothing.
    ///
    /// - Throws: `AccountNotFound`, `AccountCorrupt`, `AccountTooNew`, `AccountBusy`, or
    ///   `MigrationFailed` when no plan reaches a declarative `schema.sql`.
    func plan(_ account: AccountName) async throws -> MigrationPlan {
        let store = stores.current
        return try await store.withHold(account) { hold in try await pool.run { try store.plan(account, holding: hold) } }
    }

    /// The account's snapshots, newest first; an account removed with its snapshots kept still has them.
    ///
    /// - Throws: `AccountNotFound` when there is neither a file nor a snapshot.
    func snapshots(_ account: AccountName) async throws -> [SnapshotInfo] {
        let store = stores.current
        return try await pool.run {
            let snapshots = store.listSnapshots(account)
            guard FileManager.default.fileExists(atPath: store.root.accountPath(account)) || !snapshots.isEmpty else {
                throw AccountdError(.accountNotFound, "account \(account) does not exist", account: account.rawValue)
            }
            return snapshots
        }
    }

    /// Takes a snapshot of `account` now (`Snapshot`).
    ///
    /// - Throws: `AccountNotFound`, `AccountCorrupt`, `AccountBusy` or a storage error.
    func snapshot(_ account: AccountName, label: SnapshotLabel) async throws -> SnapshotInfo {
        let store = stores.current
        let taken = try await store.withHold(account) { hold in try await pool.run { try store.takeSnapshot(account, label: label, holding: hold) } }
        metrics.snapshot(.request)
        logger.notice(
            "account \(account): snapshot \(taken.name) taken on request (version \(taken.version), \(taken.sizeBytes) bytes)",
            metadata: ["account": "\(account)"])
        return taken
    }

    /// What a restore did.
    struct Restored: Sendable {
        var restored: SnapshotInfo
        /// The replaced file, kept as a snapshot; nil when there was no file.
        var saved: SnapshotInfo?
        /// For the active account: how it was opened again, or why it could not be.
        var reopened: RestoreReply.Reopened?
    }

    /// Thrown by ``restore(_:snapshot:reclaim:onlyAbove:)`` when, with the account held, its
    /// file is at the floor or below already (a rollback running beside another): nothing changed.
    struct AtOrBelow: Error {
        var version: Int
    }

    /// Restores a snapshot; an active account is opened again at once (and migrated if the copy is older).
    ///
    /// The restore stands once the file is replaced: a reopen that fails (a migration the
    /// restored data breaks) is said in ``Restored/reopened``, not thrown, and `Status` says
    /// `failed` with the restored file's version until an open of it succeeds.
    /// With `reclaim`, an account handed off from this host is restored here all the same,
    /// and its handoff ends (without it, `AccountMoved`). With `onlyAbove`, nothing is restored
    /// when the file, read with the account held, is at that version or below (``AtOrBelow``).
    func restore(_ account: AccountName, snapshot: String?, reclaim: Bool = false, onlyAbove floor: Int? = nil) async throws -> Restored {
        let (store, preferences) = (stores.current, preferences)
        let (restored, saved) = try await store.withHold(account) { hold in
            if let floor, let version = try await pool.run({ store.status(account).version }), version <= floor {
                throw AtOrBelow(version: version)
            }
            await preferences.close(account)
            return try await pool.run {
                let result = try store.restore(account, snapshot: snapshot, reclaim: reclaim, holding: hold)
                // Pinned before the account is let go: the reopen below may migrate it, and
                // the snapshot that migration takes must not prune the one just restored.
                store.pins.pin(account, result.restored.name)
                return result
            }
        }
        defer { store.pins.unpin(account, restored.name) }
        if saved != nil { metrics.snapshot(.restore) }
        let replaced = saved.map { "the replaced file was kept as snapshot \($0.name)" } ?? "it had no file to replace (it had been removed)"
        logger.notice(
            "account \(account) restored from snapshot \(restored.name) (version \(restored.version)); \(replaced)",
            metadata: ["account": "\(account)"])
        let reopened = await reopen(account, restoredFrom: "snapshot \(restored.name)", version: restored.version)
        return Restored(restored: restored, saved: saved, reopened: reopened)
    }

    /// After a restore: an active account is opened again at once (and migrated if the copy is
    /// older); nil when the account is not active. A reopen that fails is said, not thrown.
    func reopen(_ account: AccountName, restoredFrom source: String, version restoredVersion: Int) async -> RestoreReply.Reopened? {
        var reopened: RestoreReply.Reopened?
        switching.forgetMigrationInUse(account)
        // The restored file passed the full check before it was put in place: a record that
        // it was damaged or unreadable no longer holds, active or not.
        await switching.failedAccounts.fileFoundSound(account, on: pool, logger: logger)
        if switching.isActive(account) {
            do {
                let switched = try await switching.switchTo(account, create: false, commit: .refresh, progress: nil)
                if switched.committed {
                    reopened = RestoreReply.Reopened(action: switched.outcome.action.rawValue, version: switched.outcome.version)
                }
            } catch {
                let failure = error as? AccountdError
                let problem = failure?.message ?? "\(error)"
                let version = failure?.fromVersion ?? restoredVersion
                logger.error(
                    "account \(account) was restored from \(source), but the active account could not be opened again at the bundle's version; its file stays at version \(version): \(problem)",
                    metadata: ["account": "\(account)", "operation": "Restore", "error": "\(failure?.wireName.rawValue ?? "\(error)")"])
                reopened = RestoreReply.Reopened(action: "failed", version: version, problem: problem)
            }
        }
        return reopened
    }

    /// Removes `account` (`Remove`): its file, after a final snapshot, or with `purge`
    /// everything of it under the data root.
    ///
    /// Under the account's lock, `caller`'s own active account is refused and the account's
    /// open preference table is closed before a byte changes. Once it is gone, it is no
    /// longer any other uid's active account either (``SwitchService/releaseRemoved(_:)``).
    ///
    /// - Throws: `AccountActive`, `AccountNotFound`, `AccountBusy` or a storage error.
    ///
    /// With `handoff` (a move to another host), under the same hold: the record of the
    /// handoff is written durably first (from then on this host refuses the account with
    /// `AccountMoved`), Litestream syncs the account a last time (which must succeed, or the
    /// record is erased again and nothing changed), then the file goes as in a removal. Every
    /// write acknowledged before took the account's lock before the handoff did, so it is in
    /// the file Litestream syncs; every write after finds the record.
    func remove(_ account: AccountName, purge: Bool, handoff: Bool = false, caller: UInt32) async throws -> RemoveOutcome {
        let (store, preferences, switching, replication) = (stores.current, preferences, switching, replication)
        let outcome = try await store.withHold(account) { hold in
            // The caller's active account is refused, and the account's table closed, before anything else.
            try await switching.beginRemoval(account, caller: caller)
            defer { switching.endRemoval(account) }
            await preferences.close(account)
            if handoff {
                guard let replica = replication.replicaForRecord else {
                    throw ReplicationService.noHandoff(account, "this daemon runs without replication (replication.litestream.replica is not set)")
                }
                // A handoff whose final sync cannot happen is refused before anything is written.
                try replication.refuseHandoffThatCannotSync(account)
                // The record is durable before the final sync, so no write can land after it.
                let resumed = try await pool.run { try store.recordHandoff(account, replica: replica, holding: hold) }
                do {
                    try await replication.release(account, handoff: true)
                } catch {
                    // A first attempt changes nothing; a resumed one (after a crash) keeps the account refused.
                    if !resumed { _ = try? await pool.run { try store.abandonHandoff(account, holding: hold) } }
                    throw error
                }
            } else {
                // Litestream's final sync, on an event loop within its deadline: no pool thread
                // waits for it, and a hung Litestream fails the removal with nothing changed.
                try await replication.release(account)
            }
            let outcome = try await pool.run { try store.remove(account, purge: purge, handingOff: handoff, holding: hold) }
            await switching.releaseRemoved(account)
            // Its file is gone: it fails no more, and a purged name leaves failures.json too.
            await switching.failedAccounts.succeeded(account, on: pool, logger: logger)
            if purge { try await switching.forgetPurged(account) }
            return outcome
        }
        if outcome.snapshot != nil { metrics.snapshot(.remove) }
        if handoff {
            logger.notice(
                "account \(account) handed off: Litestream synced it to \(replication.replicaForRecord ?? "the replica") a last time, its file was removed (kept as snapshot \(outcome.snapshot?.name ?? "none")), and this host refuses it until it is pulled back",
                metadata: ["account": "\(account)"])
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

    /// Each account's replication as Litestream reports it (`Replication`). Only the listing
    /// of `accounts/` takes a pool thread, briefly; Litestream is asked without one
    /// (``ReplicationService/status(accounts:now:)``).
    /// Only the accounts `include` allows are listed (a non-admin's readable ones).
    func replication(include: @escaping @Sendable (AccountName) -> Bool = { _ in true }) async throws -> ReplicationReply {
        let store = stores.current
        let accounts = try await pool.run { store.root.accountNames().filter(include) }
        return await replication.status(accounts: accounts, deviceHeldBack: preferences.isDeviceHeldBack)
    }

    /// Brings `account` from the Litestream replica (`Pull`), under its lock; the next switch
    /// opens or migrates it.
    ///
    /// - Throws: `InvalidRequest` without replication; `AccountExists`, `AccountNotFound`,
    ///   `AccountCorrupt`, `AccountTooNew`, `AccountBusy` or a storage error.
    func pull(_ account: AccountName, replica: String? = nil, reclaim: Bool = false) async throws -> PullReply {
        let (store, puller) = (stores.current, try replication.puller(replica: replica, reclaim: reclaim))
        let outcome = try await store.withHold(account) { hold in try await store.pull(account, with: puller, holding: hold, on: pool) }
        logger.notice(
            "account \(account) pulled from \(puller.replica.redact(puller.replica.account(account))) at version \(outcome.version) (Litestream txid \(outcome.txid ?? "unknown"))",
            metadata: ["account": "\(account)"])
        return PullReply(account: account.rawValue, version: outcome.version, sizeBytes: outcome.sizeBytes, txid: outcome.txid)
    }

    /// Imports the file at `path` as the new account `account` (`Import`); the next switch
    /// opens or migrates it.
    ///
    /// The file is built and checked in `tmp/` on a pool thread without the account's lock
    /// (a large `sql` export takes a while); the lock is taken only to ask the replica
    /// (``ReplicationService/beforeImporting(_:overReplica:store:on:)``), check the account
    /// still has no file, and link the built file into place.
    ///
    /// - Throws: `AccountExists` (here, or in the replica without `overReplica`),
    ///   `AccountCorrupt`, `AccountTooNew`, `AccountMoved`, `AccountBusy` or a storage error
    ///   (a path the import does not read, a replica that cannot be asked).
    ///
    /// An `sql` replay stops at once (`interrupted`, its staging file removed) when the daemon
    /// stops (SIGTERM) or `clientGone` says the client went away.
    func importFile(
        _ account: AccountName, path: String, rebind: Bool, overReplica: Bool = false, caller: PeerCredentials,
        clientGone: @escaping @Sendable () -> Bool = { false }
    ) async throws -> ImportReply {
        let (store, replication) = (stores.current, replication)
        let who = ImportSource.Caller(uid: caller.uid, gid: caller.gid, groups: caller.groups)
        let staged = try await pool.run {
            try store.stageImport(path, as: account, rebind: rebind, caller: who) { SQLiteInterrupt.isStopping || clientGone() }
        }
        let outcome: AccountImport.Outcome
        do {
            outcome = try await store.withHold(account) { hold in
                try await replication.beforeImporting(account, overReplica: overReplica, store: store, on: pool)
                return try await pool.run { try store.installImport(staged, holding: hold) }
            }
        } catch {
            _ = try? await pool.run { AccountImport(root: store.root).discard(staged) }
            throw error
        }
        _ = try? await pool.run { AccountImport(root: store.root).discard(staged) }
        // A new file, checked whole: what was recorded of that name before (a create that
        // failed, a removed account's failure) is not about it (hostile34d F2).
        await switching.failedAccounts.succeeded(account, on: pool, logger: logger)
        logger.notice(
            "account \(account) imported from \(path) (\(outcome.format.rawValue), version \(outcome.version), \(outcome.rows) rows) by uid \(caller.uid)",
            metadata: ["account": "\(account)"])
        return ImportReply(account: account.rawValue, version: outcome.version, rows: outcome.rows)
    }
}
