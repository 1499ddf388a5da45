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
        prepareProcess(settings)
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        let poolThreads = BlockingPool.daemonThreadCount(migrateConcurrency: settings.migrateConcurrency)
        try raiseFileLimit(settings, eventLoops: loops.count, poolThreads: poolThreads, logger: logger)
        let root = try DataRoot(settings.dataRoot)
        let lock = try DataRootLock(root: root.path)
        defer { _ = lock }
        // Leftovers of exports that were interrupted by a crash (never through a link).
        do { try root.clearStagedExports() } catch { logger.warning("\(error)") }
        // Leftovers of Litestream commands of an earlier run that died without its shutdown:
        // children still running, configurations holding the replica's password, staging files.
        do {
            let left = try root.clearLitestreamLeftovers()
            if !left.stopped.isEmpty || left.removed > 0 {
                logger.notice(
                    "start-up: an earlier accountd on this data root died during Litestream commands; stopped \(left.stopped.count) litestream child(ren) it left running and removed \(left.removed) file(s) they used")
            }
        } catch {
            logger.warning("\(error)")
        }
        // Leftovers of restores, creations and snapshots that a crash interrupted: a restore's
        // staged copy is as large as its account (hostile34e G4).
        do {
            let removed = try root.clearInterruptedWork()
            if removed > 0 {
                logger.notice("start-up: removed \(removed) file(s) that operations interrupted by an earlier crash left in the data root (staged copies, unfinished snapshots)")
            }
        } catch {
            logger.warning("\(error)")
        }
        // A pull that ended a handoff and was interrupted after its link: the account is here.
        do {
            for account in try HandoffMark.finishInterruptedPulls(root) {
                logger.notice(
                    "start-up: a pull of account \(account) that ended its handoff was interrupted by a crash after the file was put in place; the handoff record is erased and this host serves the account",
                    metadata: ["account": "\(account)"])
            }
        } catch {
            logger.warning("\(error)")
        }
        root.ensureTemporaryFolder()
        let bundle = try loadBundle(settings, logger: logger)
        let stores = Reloadable(AccountStore(root: root, bundle: bundle, options: settings.storeOptions))
        let pool = BlockingPool(threads: poolThreads)
        let hub = EventHub()
        // One registry for the daemon; its parts are given it explicitly (see DaemonMetrics).
        let metrics = DaemonMetrics(accountLabels: settings.metricsAccountLabels)
        metrics.bootstrapProcess()
        // Before the preference tables could make a new, empty device.sqlite.
        let deviceAsked = await pullDeviceIfMissing(settings, root: root, pool: pool, logger: logger)
        let preferences = try PreferenceService(
            declarations: settings.namespaces, root: root, hub: hub, groupCommit: settings.groupCommit, pool: pool, metrics: metrics,
            holdDeviceBack: !deviceAsked)
        // Its settings are put in force (and Litestream's configuration written) in openServices.
        let replication = ReplicationService(settings: nil, root: root, logger: logger)
        // Device namespaces held back: the replica, as the settings then in force name it, is
        // asked again until it answers.
        let recovery: DeviceRecovery? =
            preferences.isDeviceHeldBack ? DeviceRecovery(replication: replication, preferences: preferences, pool: pool, logger: logger) : nil
        let served: Result<Void, any Error> = await withTaskGroup(of: Void.self) { group in
            // The recovery is a child of the daemon's run, cancelled once serving ends.
            if let recovery { group.addTask { await recovery.run() } }
            defer { group.cancelAll() }
            do {
                let services = try openServices(
                    settings, root: root, stores: stores, preferences: preferences, replication: replication, pool: pool, hub: hub,
                    metrics: metrics, logger: logger)
                try await serve(settings, loader: loader, services: services, loops: loops, logger: logger)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        // Every accepted Set is committed and the tables closed while the pool still runs; past
        // the grace, the daemon exits whatever the pool's threads are doing (ShutdownDeadline).
        await ShutdownDeadline.drain(logger: logger) {
            await preferences.closeAll()
            try? await pool.shutdown()
            // A stream cancelled at the end of shutdown's grace may not have unwound yet: its
            // staged copy goes now, not at the next start (no pool work runs any more).
            do { try root.clearStagedExports() } catch { logger.warning("\(error)") }
        }
        try served.get()
        logger.notice("accountd stopped")
    }

    /// The process's settings that come before anything else: the file mode mask, the
    /// signals the daemon ignores, the malloc arenas, the WAL bound of every connection, and
    /// whether checkpoints are left to Litestream.
    private static func prepareProcess(_ settings: DaemonSettings) {
        umask(0o077)
        // SIGHUP's default action ends the process; ignore it until the reload service traps it.
        signal(SIGHUP, SIG_IGN)
        // Past a file-size limit (RLIMIT_FSIZE), a write should fail with EFBIG, which SQLite
        // reports as a disk I/O error and rolls back, instead of killing the daemon.
        signal(SIGXFSZ, SIG_IGN)
        Malloc.boundArenas()
        Connections.limitWAL(toBytes: settings.walMaxBytes)
        Connections.leaveCheckpointsToReplicator(settings.replication != nil)
    }

    /// With replication, brings a missing device.sqlite back from the replica
    /// (``DevicePull``) before a new, empty one could be made and shadow it there: Litestream
    /// is awaited, the file work runs on `pool`. If the replica cannot be asked, the daemon
    /// starts all the same (the log says so) but returns false: device namespaces are then
    /// held back, no device.sqlite made, until the replica answers (``DeviceRecovery``).
    private static func pullDeviceIfMissing(_ settings: DaemonSettings, root: DataRoot, pool: BlockingPool, logger: Logger) async -> Bool {
        guard let replicating = settings.replication else { return true }
        let shown = replicating.replica.redact(replicating.replica.device)
        do {
            let pulled = try await DevicePull(root: root, replica: replicating.replica, litestream: replicating.litestream())
                .pullIfMissing(on: pool)
            if case .pulled(let txid) = pulled {
                logger.notice("device.sqlite was missing; pulled from the replica \(shown) (Litestream txid \(txid ?? "unknown"))")
            }
            return true
        } catch {
            logger.error(
                "device.sqlite is missing and could not be pulled from the replica \(shown): \(error); device namespaces are refused, and no new device.sqlite is made, until the replica answers (asked again every \(Int(DeviceRecovery.retrySeconds)) s): an empty one would replace the replica's. Fix the replica's access")
            return false
        }
    }

    /// Raises the open-file limit to what the connections, the loops and the pool may need.
    private static func raiseFileLimit(_ settings: DaemonSettings, eventLoops: Int, poolThreads: Int, logger: Logger) throws {
        let files = try FileLimit(maximumConnections: settings.maximumConnections, eventLoops: eventLoops, blockingThreads: poolThreads)
            .ensure()
        if files.after.soft != files.before.soft {
            logger.info("raised the open-file limit from \(files.before.soft) to \(files.after.soft) (hard limit \(files.after.hard))")
        }
    }

    /// Loads the schema bundle, and says which.
    private static func loadBundle(_ settings: DaemonSettings, logger: Logger) throws -> SchemaBundle {
        // Said first: a bundle whose check never ends (its migrations run on an empty
        // database) would otherwise leave a daemon that never listens without a word.
        logger.info("checking the schema bundle \(settings.schemaDirectory)")
        let bundle = try SchemaBundle.load(
            from: settings.schemaDirectory, interrupt: SQLiteInterrupt(within: SQLiteInterrupt(), timeLimit: settings.bundleCheckTimeLimit))
        logger.info(
            "schema bundle \(bundle.directory): version \(bundle.targetVersion), \(bundle.declarative == nil ? "\(bundle.migrations.count) migrations" : "declarative"), new accounts from \(bundle.creationMethod.rawValue)")
        return bundle
    }

    /// Writes Litestream's configuration and makes the services.
    private static func openServices(
        _ settings: DaemonSettings, root: DataRoot, stores: Reloadable<AccountStore>, preferences: PreferenceService,
        replication: ReplicationService, pool: BlockingPool, hub: EventHub, metrics: DaemonMetrics, logger: Logger
    ) throws -> Services {
        // Litestream's configuration is written before anything is served, so that the
        // accountd-litestream unit, ordered after this one, finds it.
        try replication.apply(settings.replication)
        let services = Services(
            stores: stores, preferences: preferences, pool: pool, hub: hub, metrics: metrics, replication: replication,
            sqlLimits: sqlLimits(settings, poolThreads: pool.threads), logger: logger)
        return services
    }

    /// The `limits.*` of statements and streamed replies, with the fair shares resolved for a pool of `poolThreads`.
    private static func sqlLimits(_ settings: DaemonSettings, poolThreads: Int) -> DataService.Limits {
        let streams = settings.streams
        let threads = UidShares.threads(poolThreads: poolThreads, migrations: settings.migrateConcurrency)
        return DataService.Limits(
            timeoutMs: settings.queryTimeoutMs, maxRows: settings.queryMaxRows, statementsPerUid: streams.statements(threads: threads),
            statementThreads: threads,
            streamStallSeconds: streams.streamStallSeconds, stagedExportsPerUid: streams.stagedExportsPerUid, stagedExports: streams.stagedExports,
            replyBytes: streams.replyBytes, replyBytesPerUid: streams.replyBytesPerUid)
    }

    /// Finishes a purge that a crash or a failed deletion interrupted, its name erased from
    /// state.json too, before anything is served.
    private static func finishInterruptedPurges(root: DataRoot, switching: SwitchService, logger: Logger) async {
        do {
            for account in try root.finishInterruptedPurges() {
                try await switching.forgetPurged(account)
                logger.notice("finished the purge of account \(account) that was interrupted", metadata: ["account": "\(account)", "operation": "Remove"])
            }
        } catch {
            logger.error("finishing an interrupted purge failed: \(error); purge the account again")
        }
    }

    /// Tells systemd, finishes interrupted purges, starts opening the saved active account
    /// in the background, then serves every socket until SIGTERM or SIGINT, with the
    /// watchdog and the reload service, and returns once every connection has closed (its request
    /// answered, or after its 10 s closing grace).
    private static func serve(
        _ settings: DaemonSettings, loader: SettingsLoader, services: Services, loops: [any EventLoop], logger: Logger
    ) async throws {
        let switching = services.switching
        let systemd = SystemdStatus(active: { switching.active })
        services.hub.listen(systemd.handle)
        await finishInterruptedPurges(root: services.stores.current.root, switching: switching, logger: logger)
        let policy = Reloadable(AccessPolicy(adminUsers: settings.adminUsers, adminGroups: settings.adminGroups, grants: settings.grants))
        let servers = makeServers(settings, services: services, policy: policy, systemd: systemd, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                // Shut down last first, one at a time: InterruptOnShutdown stops long SQLite
                // work and returns, then the sockets stop taking work, and the watchdog is fed
                // until every connection has closed (its request answered, or after the
                // connection's 10 s closing grace).
                services: [
                    .init(service: Watchdog(check: LivenessCheck(loops: loops, storeRead: switching.livenessRead), logger: logger)),
                    // Beside the sockets: the daemon listens at once, whoever holds the saved account's file.
                    // It ends once every saved account opened or failed, and the others run on.
                    .init(service: StartupOpener(switching: switching), successTerminationBehavior: .ignore),
                    .init(service: ClearedAccountSaver(switching: switching)),
                    .init(
                        service: ReloadService(
                            loader: loader, initial: settings, services: services, policy: policy, systemd: systemd, logger: logger)),
                    .init(service: SocketServers(servers: servers)),
                    // First to hear of a shutdown: a running migration must not hold it.
                    .init(service: InterruptOnShutdown(board: switching.board, logger: logger)),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    /// One server per socket: systemd's when it handed sockets over, else both bound here.
    private static func makeServers(
        _ settings: DaemonSettings, services: Services, policy: Reloadable<AccessPolicy>, systemd: SystemdStatus, logger: Logger
    ) -> [SocketServer] {
        let dispatcher = Dispatcher(services: services, policy: policy, logger: logger, migrateConcurrency: settings.migrateConcurrency)
        let plan = SocketActivation.plan(
            passed: SocketActivation.passedSockets(), linePath: settings.socketPath, varlinkPath: settings.varlinkSocketPath,
            mode: settings.socketMode)
        if let activation = plan.activation { logger.notice("\(activation)") }
        // Ready once every socket accepts connections; stopping once the first stops taking them.
        let listening = Countdown(plan.listeners.count)
        let stopping = Countdown(1)
        let counter = ConnectionCounter(
            limit: settings.maximumConnections, perUid: settings.streams.connections(maxConnections: settings.maximumConnections),
            adminReserve: settings.adminReservedConnections, metrics: services.metrics)
        let idleTimeout: TimeAmount? = settings.idleTimeoutSeconds > 0 ? .milliseconds(Int64(settings.idleTimeoutSeconds * 1000)) : nil
        return plan.listeners.map { framing, listener in
            SocketServer(
                listener: listener, framing: framing, dispatcher: dispatcher, hub: services.hub,
                maximumRequestBytes: settings.maximumRequestBytes, counter: counter, idleTimeout: idleTimeout, logger: logger,
                onReady: {
                    guard listening.tick() else { return }
                    logger.notice("accountd \(AccountdVersion.current) ready: \(systemd.ready())")
                },
                onStopping: {
                    guard stopping.tick() else { return }
                    systemd.stopping()
                    // A pull or restore waiting for a store that does not answer ends now.
                    services.replication.stopLitestream()
                    logger.notice("shutting down: no new connections; finishing the requests in progress")
                })
        }
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
