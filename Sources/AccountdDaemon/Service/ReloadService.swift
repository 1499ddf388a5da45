import AccountdCore
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Re-reads the config and the schema bundle on SIGHUP (`systemctl reload accountd`).
///
/// - The log level and the admin users and groups apply at once.
/// - Changed replication settings rewrite Litestream's configuration at once (restart
///   `accountd-litestream` for Litestream to read it).
/// - A bundle that fails its checks is refused with a log line naming the file and
///   line, and the bundle in use keeps serving.
/// - A valid new bundle applies to the next switch, and the active account is
///   brought to it at once (migrated if it is now older).
/// - The data root and socket cannot change without a restart; a changed value is
///   logged and ignored.
struct ReloadService: Service {
    let loader: SettingsLoader
    let initial: DaemonSettings
    let services: Services
    let policy: Reloadable<AccessPolicy>
    let systemd: SystemdStatus
    let logger: Logger

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
        let settings: DaemonSettings
        do {
            settings = try await loader.load()
        } catch {
            logger.error("reload refused: \(error); the previous settings stay in force")
            return
        }
        LoggingSetup.currentLevel = settings.logLevel
        policy.replace(AccessPolicy(adminUsers: settings.adminUsers, adminGroups: settings.adminGroups))
        if settings.replication != services.replication.settings.current {
            do {
                try services.replication.apply(settings.replication)
                if settings.replication == nil { logger.notice("reload: replication is now off; stop accountd-litestream") }
            } catch {
                logger.error("reload: \(error); the previous replication settings stay in force")
            }
        }
        if settings.dataRoot != initial.dataRoot || settings.socketPath != initial.socketPath {
            logger.warning("reload: data.root and socket.path change only with a restart; still using \(initial.dataRoot) and \(initial.socketPath)")
        }
        let current = services.stores.current.bundle
        let bundle: SchemaBundle
        do {
            bundle = try await services.pool.run { try SchemaBundle.load(from: settings.schemaDirectory) }
        } catch {
            logger.error(
                "reload: \(error); still serving bundle version \(current.targetVersion) from \(current.directory)",
                metadata: ["error": "\(error)"])
            return
        }
        guard bundle.fingerprint != current.fingerprint || settings.storeOptions.snapshotsToKeep != initial.snapshotsToKeep
            || settings.storeOptions.snapshotMaxAgeDays != initial.snapshotMaxAgeDays
        else {
            logger.notice("reload done: the schema bundle is unchanged (version \(bundle.targetVersion))")
            return
        }
        services.stores.replace(services.stores.current.replacing(bundle: bundle, options: settings.storeOptions))
        logger.notice("reload: now serving bundle version \(bundle.targetVersion) from \(bundle.directory) (was \(current.targetVersion))")
        if let active = services.switching.active {
            do {
                let result = try await services.switching.switchTo(active, create: false, save: false, progress: nil)
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
