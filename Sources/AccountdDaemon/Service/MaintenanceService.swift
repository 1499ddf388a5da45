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

    func verify(_ account: AccountName) async throws -> VerifyReport {
        let store = stores.current
        return try await store.withHold(account) { hold in try await pool.run { try store.verify(account, holding: hold) } }
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

    /// Restores a snapshot; an active account is opened again at once (and migrated if the copy is older).
    ///
    /// The restore stands once the file is replaced: a reopen that fails (a migration the
    /// restored data breaks) is said in ``Restored/reopened``, not thrown, and `Status` says
    /// `failed` with the restored file's version until an open of it succeeds.
    func restore(_ account: AccountName, snapshot: String?) async throws -> Restored {
        let (store, preferences) = (stores.current, preferences)
        let (restored, saved) = try await store.withHold(account) { hold in
            await preferences.close(account)
            return try await pool.run {
                let result = try store.restore(account, snapshot: snapshot, holding: hold)
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
        var reopened: RestoreReply.Reopened?
        if switching.isActive(account) {
            do {
                let switched = try await switching.switchTo(account, create: false, commit: .refresh, progress: nil)
                if switched.committed {
                    reopened = RestoreReply.Reopened(action: switched.outcome.action.rawValue, version: switched.outcome.version)
                }
            } catch {
                let failure = error as? AccountdError
                let problem = failure?.message ?? "\(error)"
                let version = failure?.fromVersion ?? restored.version
                logger.error(
                    "account \(account) was restored from snapshot \(restored.name), but the active account could not be opened again at the bundle's version; its file stays at version \(version): \(problem)",
                    metadata: ["account": "\(account)", "operation": "Restore", "error": "\(failure?.wireName.rawValue ?? "\(error)")"])
                reopened = RestoreReply.Reopened(action: "failed", version: version, problem: problem)
            }
        }
        return Restored(restored: restored, saved: saved, reopened: reopened)
    }

    /// Removes `account` (`Remove`): its file, after a final snapshot, or with `purge`
    /// everything of it under the data root.
    ///
    /// Under the account's lock, the active account is refused and the account's open
    /// preference table is closed before a byte changes.
    ///
    /// - Throws: `AccountActive`, `AccountNotFound`, `AccountBusy` or a storage error.
    func remove(_ account: AccountName, purge: Bool) async throws -> RemoveOutcome {
        let (store, preferences, switching, replication) = (stores.current, preferences, switching, replication)
        let outcome = try await store.withHold(account) { hold in
            // The active account is refused, and the account's table closed, before anything else.
            try await switching.beginRemoval(account)
            defer { switching.endRemoval(account) }
            await preferences.close(account)
            // Litestream's final sync, on an event loop within its deadline: no pool thread
            // waits for it, and a hung Litestream fails the removal with nothing changed.
            try await replication.release(account)
            let outcome = try await pool.run { try store.remove(account, purge: purge, holding: hold) }
            if purge { try await switching.forgetPurged(account) }
            return outcome
        }
        if outcome.snapshot != nil { metrics.snapshot(.remove) }
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
        return await replication.status(accounts: accounts)
    }

    /// Brings `account` from the Litestream replica (`Pull`), under its lock; the next switch
    /// opens or migrates it.
    ///
    /// - Throws: `InvalidRequest` without replication; `AccountExists`, `AccountNotFound`,
    ///   `AccountCorrupt`, `AccountTooNew`, `AccountBusy` or a storage error.
    func pull(_ account: AccountName) async throws -> PullReply {
        let (store, puller) = (stores.current, try replication.puller())
        let outcome = try await store.withHold(account) { hold in
            let staged = try await pool.run { try store.stagePull(account, with: puller, holding: hold) }
            let run: LitestreamProgram.Run
            do {
                run = try await puller.restore(staged)
            } catch {
                try? await pool.run { puller.discard(staged) }
                throw error
            }
            return try await pool.run { try store.finishPull(staged, after: run, with: puller, holding: hold) }
        }
        logger.notice(
            "account \(account) pulled from \(puller.replica.redact(puller.replica.account(account))) at version \(outcome.version) (Litestream txid \(outcome.txid ?? "unknown"))",
            metadata: ["account": "\(account)"])
        return PullReply(account: account.rawValue, version: outcome.version, sizeBytes: outcome.sizeBytes, txid: outcome.txid)
    }

    /// Exports `account` on a pool thread, writing through `write` (which blocks while the
    /// client does not read, so a slow reader slows the export instead of growing memory).
    /// The account's lock is held while its file is found, not while the data streams.
    func export(_ account: AccountName, format: ExportFormat, write: @escaping @Sendable ([UInt8]) throws -> Void) async throws -> ExportSummary {
        let store = stores.current
        let exporter = try await store.withHold(account) { hold in try await pool.run { try store.exporter(account, holding: hold) } }
        return try await pool.run {
            var sink = ReplySink(write: write)
            let summary = try exporter.export(format, to: &sink)
            try sink.flush()
            return summary
        }
    }
}
