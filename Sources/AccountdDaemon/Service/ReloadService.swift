import AccountdCore
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
///   with `PermissionDenied` before their next chunk.
/// - A changed bundle applies to the next switch, and every uid's active account is brought
///   to it at once (migrated if it is now older), one account after another.
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

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            await reload()
        }
    }

    func reload() async {
        logger.notice("reloading: SIGHUP received")
        systemd.reloading()
        defer { systemd.reloaded() }
        let old = inForce.current
        let settings: DaemonSettings
        do {
            settings = try await loader.load()
        } catch {
            logger.error("reload refused: \(error); the previous settings stay in force", metadata: ["error": "\(error)"])
            return
        }
        let current = services.stores.current.bundle
        let bundle: SchemaBundle
        do {
            bundle = try await services.pool.run { try SchemaBundle.load(from: settings.schemaDirectory) }
        } catch {
            logger.error(
                "reload refused: \(error); the previous settings stay in force, still serving bundle version \(current.targetVersion) from \(current.directory)",
                metadata: ["error": "\(error)"])
            return
        }
        if settings.replication != services.replication.settings.current {
            do {
                try services.replication.apply(settings.replication)
                if settings.replication == nil { logger.notice("reload: replication is now off; stop accountd-litestream") }
            } catch {
                logger.error("reload refused: \(error); the previous settings stay in force", metadata: ["error": "\(error)"])
                return
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
        let inEffect = applied.isEmpty ? "" : "; now in force: " + applied.map(\.description).joined(separator: ", ")
        guard bundleChanged else {
            logger.notice("reload done: the schema bundle is unchanged (version \(bundle.targetVersion))\(inEffect)")
            return
        }
        logger.notice(
            "reload: now serving bundle version \(bundle.targetVersion) from \(bundle.directory) (was \(current.targetVersion))\(inEffect)")
        // Every uid's active account, each once, in order of name.
        for active in services.switching.activeAccounts.sorted() {
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
