import AccountdCore
import AccountdProtocol
import Logging

/// Rolling a release back, one account at a time (`Migrate {rollbackTo: N}`): each account
/// above version N is restored from its newest `before-migrate` snapshot at version N, the
/// copy the release's migration took just before it changed the file.
///
/// It runs under `Migrate`'s staging (concurrency, canary, `maxFailures`, `exclude`), and
/// is resumed by running it again: an account at N or below is `current` and untouched.
/// The file each restore replaces is kept as a `before-restore` snapshot, so writes made
/// since the migration are not lost, only set aside.
struct RollBack: Sendable {
    let maintenance: MaintenanceService
    let logger: Logger

    /// Refuses a rollback the bundle in force would undo: an account restored below the
    /// bundle's version would be migrated again at its next open.
    ///
    /// - Throws: `InvalidParameter` (`rollbackTo`) when the bundle is newer than `version`.
    static func check(to version: Int, bundleVersion: Int) throws {
        guard bundleVersion > version else { return }
        throw ProtocolError(
            .invalidParameter,
            "cannot roll back to version \(version) while the bundle in force is at version \(bundleVersion): each account restored would be migrated again at its next open. "
                + "Point schema.dir at the previous release's bundle (version \(version)) and reload the daemon ('systemctl reload accountd'), then roll back again. Nothing was changed",
            facts: [("parameter", .string("rollbackTo"))])
    }

    /// Rolls `account` back to `version`: `restored`, or `current` when it is at `version`
    /// or below already.
    ///
    /// - Throws: `AccountNotFound`; `AccountCorrupt` for a file whose version cannot be
    ///   read; `SnapshotNotFound` when no `before-migrate` snapshot at `version` exists
    ///   (nothing changed); whatever the restore throws.
    func account(_ account: AccountName, to version: Int) async throws -> MigrateResult {
        let store = maintenance.stores.current
        let status = try await maintenance.pool.run { store.status(account) }
        guard status.exists else {
            throw AccountdError(.accountNotFound, "account \(account) does not exist; nothing to roll back", account: account.rawValue)
        }
        if status.state == .unavailable {
            // A full or failing disk, or another process's lock: the file is not at fault (hostile34e G2).
            throw AccountdError(
                .storage, "account \(account) cannot be read now (\(status.problem ?? "unavailable")); it was not rolled back, and nothing was changed. "
                    + "Free space on the disk (or end what holds the file), then run the same command again",
                account: account.rawValue, file: store.root.accountPath(account))
        }
        guard let current = status.version else {
            throw AccountdError(
                .accountCorrupt, "account \(account)'s version cannot be read (\(status.problem ?? status.state.rawValue)); nothing was changed",
                account: account.rawValue, file: store.root.accountPath(account))
        }
        guard current > version else {
            return MigrateResult(account: account.rawValue, outcome: .done(result: "current", fromVersion: nil, version: current))
        }
        let snapshots = try await maintenance.snapshots(account)
        guard let chosen = snapshots.first(where: { $0.version == version && $0.name.contains("-before-migrate") }) else {
            throw AccountdError(
                .snapshotNotFound,
                "account \(account) is at version \(current) and has no before-migrate snapshot at version \(version) to roll back to; "
                    + "list its snapshots ('accountctl snapshots \(account)') and restore one by hand ('accountctl restore \(account) SNAPSHOT'), "
                    + "or leave it out with --exclude \(account). Nothing was changed",
                account: account.rawValue, fromVersion: current, toVersion: version)
        }
        let done: MaintenanceService.Restored
        do {
            // Judged again with the account held: a rollback running beside this one may have
            // restored it since its version was read (hostile34d F1).
            done = try await maintenance.restore(account, snapshot: chosen.name, onlyAbove: version)
        } catch let already as MaintenanceService.AtOrBelow {
            return MigrateResult(account: account.rawValue, outcome: .done(result: "current", fromVersion: nil, version: already.version))
        }
        logger.notice(
            "rollback: account \(account) restored from snapshot \(chosen.name), from version \(current) to \(done.restored.version)\(done.saved.map { "; the file it replaced was kept as snapshot \($0.name)" } ?? "")",
            metadata: ["account": "\(account)", "operation": "Migrate"])
        return MigrateResult(account: account.rawValue, outcome: .done(result: "restored", fromVersion: current, version: done.restored.version))
    }
}
