import AccountdCore
import AccountdProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Starts accountd: checks the data root and the bundle, opens the saved active
/// account, serves until SIGTERM, and shuts down gracefully.
public enum Daemon {
    /// Runs the daemon with resolved settings.
    ///
    /// Ready (and `READY=1` to systemd) means every socket accepts connections and the first
    /// attempt to open the saved active account has ended; an account another process holds
    /// is opened in the background after that (`Status` says `opening`).
    ///
    /// - Throws: when the data root, the bundle or the socket cannot be used; the error says which.
    public static func run(settings: DaemonSettings, loader: SettingsLoader, logger: Logger) async throws {
        umask(0o077)
        // SIGHUP's default action ends the process; ignore it until the reload service traps it.
        signal(SIGHUP, SIG_IGN)
        // Past a file-size limit (RLIMIT_FSIZE), a write should fail with EFBIG, which SQLite
        // reports as a disk I/O error and rolls back, instead of killing the daemon.
        signal(SIGXFSZ, SIG_IGN)
        Malloc.boundArenas()
        Connections.limitWAL(toBytes: settings.walMaxBytes)
        Connections.leaveCheckpointsToReplicator(settings.replication != nil)
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        let poolThreads = BlockingPool.daemonThreadCount(migrateConcurrency: settings.migrateConcurrency)
        let files = try FileLimit(maximumConnections: settings.maximumConnections, eventLoops: loops.count, blockingThreads: poolThreads)
            .ensure()
        if files.after.soft != files.before.soft {
            logger.info("raised the open-file limit from \(files.before.soft) to \(files.after.soft) (hard limit \(files.after.hard))")
        }
        let root = try DataRoot(settings.dataRoot)
        let lock = try DataRootLock(root: root.path)
        defer { _ = lock }
        // Leftovers of exports that were interrupted by a crash (never through a link).
        do { try root.clearStagedExports() } catch { logger.warning("\(error)") }
        let bundle = try SchemaBundle.load(from: settings.schemaDirectory)
        logger.info(
            "schema bundle \(bundle.directory): version \(bundle.targetVersion), \(bundle.declarative == nil ? "\(bundle.migrations.count) migrations" : "declarative"), new accounts from \(bundle.creationMethod.rawValue)")
        let stores = Reloadable(AccountStore(root: root, bundle: bundle, options: settings.storeOptions))
        let pool = BlockingPool(threads: poolThreads)
        let hub = EventHub()
        // One registry for the daemon; its parts are given it explicitly (see DaemonMetrics).
        let metrics = DaemonMetrics(accountLabels: settings.metricsAccountLabels)
        metrics.bootstrapProcess()
        // With replication, a missing device.sqlite comes back from the replica before a new,
        // empty one could be made and shadow it there.
        // If the replica cannot be asked, the daemon starts all the same (the log says so):
        // device-wide preferences are not worth a device that does not start.
        if let replicating = settings.replication {
            let shown = replicating.replica.redact(replicating.replica.device)
            do {
                let pulled = try DevicePull(root: root, replica: replicating.replica, litestream: LitestreamProgram(executable: replicating.program))
                    .pullIfMissing()
                if case .pulled(let txid) = pulled {
                    logger.notice("device.sqlite was missing; pulled from the replica \(shown) (Litestream txid \(txid ?? "unknown"))")
                }
            } catch {
                logger.error(
                    "device.sqlite is missing and could not be pulled from the replica \(shown): \(error); a new one is made if a device namespace needs it, and once Litestream ships it, it replaces the replica's. Stop accountd and accountd-litestream if the replica's copy matters, and fix the replica's access first")
            }
        }
        let preferences = try PreferenceService(
            declarations: settings.namespaces, root: root, hub: hub, groupCommit: settings.groupCommit, pool: pool, metrics: metrics)
        defer { preferences.closeAll() }
        // Litestream's configuration is written before anything is served, so that the
        // accountd-litestream unit, ordered after this one, finds it.
        let replication = ReplicationService(settings: nil, root: root, logger: logger)
        try replication.apply(settings.replication)
        let services = Services(
            stores: stores, preferences: preferences, pool: pool, hub: hub, metrics: metrics, replication: replication,
            sqlLimits: DataService.Limits(timeoutMs: settings.queryTimeoutMs, maxRows: settings.queryMaxRows), logger: logger)
        let switching = services.switching
        let systemd = SystemdStatus(active: { switching.active })
        hub.listen(systemd.handle)
        // A purge that a crash or a failed deletion interrupted is finished now, its name
        // erased from state.json too, before anything is served.
        do {
            for account in try root.finishInterruptedPurges() {
                try switching.forgetPurged(account)
                logger.notice("finished the purge of account \(account) that was interrupted", metadata: ["account": "\(account)", "operation": "Remove"])
            }
        } catch {
            logger.error("finishing an interrupted purge failed: \(error); purge the account again")
        }
        // In the background: the daemon listens at once, whoever holds the saved account's file.
        switching.openSavedAccount()

        let policy = Reloadable(AccessPolicy(adminUsers: settings.adminUsers, adminGroups: settings.adminGroups, grants: settings.grants))
        let dispatcher = Dispatcher(services: services, policy: policy, logger: logger, migrateConcurrency: settings.migrateConcurrency)
        // Handed sockets, systemd's are served and no other; else both are bound.
        let plan = SocketActivation.plan(
            passed: SocketActivation.passedSockets(), linePath: settings.socketPath, varlinkPath: settings.varlinkSocketPath,
            mode: settings.socketMode)
        if let activation = plan.activation { logger.notice("\(activation)") }
        // Ready once every socket accepts connections; stopping once the first stops taking them.
        let listening = Countdown(plan.listeners.count)
        let stopping = Countdown(1)
        let counter = ConnectionCounter(limit: settings.maximumConnections, metrics: metrics)
        let idleTimeout: TimeAmount? = settings.idleTimeoutSeconds > 0 ? .milliseconds(Int64(settings.idleTimeoutSeconds * 1000)) : nil
        let servers = plan.listeners.map { framing, listener in
            SocketServer(
                listener: listener, framing: framing, dispatcher: dispatcher, hub: hub,
                maximumRequestBytes: settings.maximumRequestBytes, counter: counter, idleTimeout: idleTimeout, logger: logger,
                onReady: {
                    guard listening.tick() else { return }
                    logger.notice("accountd \(AccountdVersion.current) ready: \(systemd.ready())")
                },
                onStopping: {
                    guard stopping.tick() else { return }
                    systemd.stopping()
                    logger.notice("shutting down: no new connections; finishing the requests in progress")
                })
        }
        let group = ServiceGroup(
            configuration: .init(
                // Shut down last first: the sockets stop taking work at once, and the watchdog
                // is fed while the requests in progress finish.
                services: [
                    .init(service: Watchdog(check: LivenessCheck(loops: loops, storeRead: switching.livenessRead), logger: logger)),
                    .init(
                        service: ReloadService(
                            loader: loader, initial: settings, services: services, policy: policy, systemd: systemd, logger: logger)),
                    .init(service: SocketServers(servers: servers)),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        try? await pool.shutdown()
        logger.notice("accountd stopped")
    }
}

/// Counts events down, so that something happens once all of them have: the daemon is
/// ready once each of its sockets listens.
private final class Countdown: Sendable {
    private let left: Atomic<Int>

    init(_ count: Int) { left = Atomic(count) }

    /// True only for the event that brings the count to zero.
    func tick() -> Bool { left.subtract(1, ordering: .relaxed).newValue == 0 }
}
