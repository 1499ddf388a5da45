import AccountdCore
import AccountdProtocol
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Re-reads the config and the schema bundle on SIGHUP (`systemctl reload accountd`).
///
/// A reload is a transaction against what is in force (the start-up settings as the last
/// good reload changed them, and the bundle now served):
///
/// - The settings and the bundle are read and checked whole first. A setting out of range,
///   an unknown key, or a bundle that fails its checks refuses the reload, with a log line
///   naming the key or the file and line; everything in force stays, the log level and the
///   admin users included.
/// - A good one takes every setting a reload can change into force at once: the log level,
///   the admin users and groups, the access grants (whole: the new list replaces the old), the `accounts.*` options but `migrateConcurrency` (for the
///   next operation), and the replication settings (Litestream's configuration is rewritten;
///   restart `accountd-litestream` for Litestream to read it). Whether the bundle changed
///   does not matter. A uid that may no longer read its active account has none from now on
///   (cleared in `state.json` too), and its streams of that account already running end
///   with `PermissionDenied` before their next piece.
/// - A bundle that does not reach the one in force (an older release put back, or other steps)
///   withdraws it: migrations running under it stop and roll back whole (``BundleWithdrawals``).
/// - A changed bundle applies to the next open, and every uid's active account is brought
///   to it (migrated if it is now older), one account after another, in the background once
///   the reload is done: a migration that runs long holds neither the next SIGHUP nor SIGTERM.
/// - The bundle's check runs its migrations on an empty database; a newer SIGHUP stops a
///   check still running (and that reload is refused, with a log line), as SIGTERM does, and
///   so does `schema.checkTimeoutSeconds` (the refusal names the file and line). `Status` and
///   the metrics show the check while it runs.
/// - The data root, the sockets, `requests.*`, `limits.*`, `accounts.migrateConcurrency`,
///   the namespaces and `preferences.groupCommit` change only with a restart; a changed
///   value is logged and left.
struct ReloadService: Service {
    let loader: SettingsLoader
    /// The settings in force: the start's, as the last good reload changed them.
    let inForce: Reloadable<DaemonSettings>
    let services: Services
    let policy: Reloadable<AccessPolicy>
    let systemd: SystemdStatus
    let logger: Logger

    init(
        loader: SettingsLoader, initial: DaemonSettings, services: Services, policy: Reloadable<AccessPolicy>, systemd: SystemdStatus,
        logger: Logger
    ) {
        self.loader = loader
        self.inForce = Reloadable(initial)
        self.services = services
        self.policy = policy
        self.systemd = systemd
        self.logger = logger
    }

    /// The check of the newest reload: a newer SIGHUP stops it (``SQLiteInterrupt``).
    let newest = Reloadable<SQLiteInterrupt?>(nil)
    /// One reload at a time, in the order of the signals.
    let turns = SerialGate()

    /// Reloads at each SIGHUP, never waiting for a reload before taking the next signal: a
    /// bundle check that runs long is stopped by a newer SIGHUP (the files on disk now are
    /// what counts), and the active accounts are brought to a new bundle in the background,
    /// so that a migration that runs long holds neither the next reload nor SIGTERM.
    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        await withDiscardingTaskGroup { group in
            for await _ in signals.cancelOnGracefulShutdown() {
                let interrupt = SQLiteInterrupt()
                newest.swap(interrupt)?.stop()
                group.addTask {
                    guard let changed = try? await turns.run({ await reload(interrupt: interrupt) }), changed else { return }
                    await bringActiveAccounts()
                }
            }
        }
    }

    /// Reads and checks the settings and the bundle, and puts them in force.
    ///
    /// - Parameter interrupt: stops the bundle's check when a newer SIGHUP comes, or at SIGTERM.
    /// - Returns: whether the bundle changed (its active accounts are still to be brought to it).
    @discardableResult
    func reload(interrupt: SQLiteInterrupt = SQLiteInterrupt()) async -> Bool {
        logger.notice("reloading: SIGHUP received")
        guard !interrupt.isStopped else {
            logger.notice("reload skipped: a newer SIGHUP came before it began (or the daemon is stopping)")
            return false
        }
        systemd.reloading()
        defer { systemd.reloaded() }
        let old = inForce.current
        let settings: DaemonSettings
        do {
            // The file and the password and group databases are read on the pool: no executor thread waits for them.
            settings = try await services.pool.run { [loader] in try loader.read() }
        } catch {
            logger.error("reload refused: \(error); the previous settings stay in force", metadata: ["error": "\(error)"])
            return false
        }
        let current = services.stores.current.bundle
        let bundle: SchemaBundle
        logger.notice("reload: checking the schema bundle \(settings.schemaDirectory) (its migrations run on an empty database; a newer SIGHUP stops the check)")
        do {
            services.reloadBegan()
            defer { services.reloadEnded() }
            let check = SQLiteInterrupt(within: interrupt, timeLimit: settings.bundleCheckTimeLimit)
            bundle = try await services.pool.run { try SchemaBundle.load(from: settings.schemaDirectory, interrupt: check) }
        } catch {
            logger.error(
                "reload refused: \(error); the previous settings stay in force, still serving bundle version \(current.targetVersion) from \(current.directory)",
                metadata: ["error": "\(error)"])
            return false
        }
        let before = services.replication.settings.current
        if settings.replication != before {
            do {
                // Litestream's configuration is written on the pool, like every other file.
                try await services.pool.run { [replication = services.replication] in try replication.apply(settings.replication) }
                if settings.replication == nil { logger.notice("reload: replication is now off; stop accountd-litestream") }
                if let before, let after = settings.replication, !ReplicaAddress.sameStore(before.replica.base, after.replica.base) {
                    logger.notice(
                        "reload: the replica is now \(after.replica.redacted); restart accountd-litestream, whose start resets Litestream's local state for it (a full copy of every database goes there)")
                }
            } catch {
                logger.error("reload refused: \(error); the previous settings stay in force", metadata: ["error": "\(error)"])
                return false
            }
        }
        // Everything is checked: from here on, the new settings are in force.
        let changes = SettingChange.between(old, settings)
        for change in changes where !change.takesEffectAtReload {
            logger.warning("reload: \(change.key) changes only with a restart; still \(change.old)")
        }
        let applied = changes.filter(\.takesEffectAtReload)
        inForce.replace(old.reloading(settings))
        LoggingSetup.currentLevel = settings.logLevel
        Connections.limitWAL(toBytes: settings.walMaxBytes)
        Connections.leaveCheckpointsToReplicator(settings.replication != nil)
        policy.replace(AccessPolicy(adminUsers: settings.adminUsers, adminGroups: settings.adminGroups, grants: settings.grants))
        // An active account its uid may no longer read is its no more (and is not migrated below).
        await services.switching.dropUnreadable(under: policy.current)
        let store = services.stores.current
        let bundleChanged = bundle.fingerprint != store.bundle.fingerprint
        if bundleChanged || settings.storeOptions != store.options {
            services.stores.replace(store.replacing(bundle: bundle, options: settings.storeOptions))
        }
        if store.isWithdrawn {
            logger.warning(
                "reload: bundle version \(store.targetVersion) is withdrawn (the new bundle does not reach it): its running migrations stop and roll back whole, and a Migrate under it begins no further account",
                metadata: ["migrations_running": "\(services.switching.board.migrations().count)"])
        }
        let inEffect = applied.isEmpty ? "" : "; now in force: " + applied.map(\.description).joined(separator: ", ")
        guard bundleChanged else {
            logger.notice("reload done: the schema bundle is unchanged (version \(bundle.targetVersion))\(inEffect)")
            return false
        }
        logger.notice(
            "reload: now serving bundle version \(bundle.targetVersion) from \(bundle.directory) (was \(current.targetVersion))\(inEffect)")
        return true
    }

    /// Brings every uid's active account to the bundle now in force, each once, in order of
    /// name. It runs after the reload is done: `Status` and the metrics show each migration
    /// while it runs, and SIGTERM stops it (rolled back whole).
    func bringActiveAccounts() async {
        let target = services.stores.current.targetVersion
        for active in services.switching.activeAccounts.sorted() {
            logger.notice("reload: bringing the active account \(active) to bundle version \(target) in the background", metadata: ["account": "\(active)"])
            do {
                let result = try await services.switching.switchTo(active, create: false, commit: .refresh, progress: nil)
                logger.notice("reload: active account \(active) \(result.outcome.action.rawValue) at version \(result.outcome.version)", metadata: ["account": "\(active)"])
            } catch {
                logger.error("reload: the active account \(active) could not be brought to the new bundle: \(error)", metadata: ["account": "\(active)", "error": "\(error)"])
            }
        }
    }
}

extension ReloadService: CustomStringConvertible {
    // ServiceLifecycle logs services by their description; never let it dump settings or the environment.
    var description: String { "ReloadService" }
}
