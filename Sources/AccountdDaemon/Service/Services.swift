import AccountdCore
import AccountdProtocol
import Foundation
import Logging

/// The services a request may need, one per responsibility, as the dispatcher sees them.
///
/// They share one ``Reloadable`` store: a reload that changes the bundle replaces it
/// there, and every service uses the new one from its next request on.
struct Services: Sendable {
    let stores: Reloadable<AccountStore>
    /// The active account and switching.
    let switching: SwitchService
    /// Verify, snapshots, restore, remove, export.
    let maintenance: MaintenanceService
    /// The key-value namespaces.
    let preferences: PreferenceService
    /// Events for `Watch` and for the daemon's own listeners.
    let hub: EventHub
    /// Where blocking work runs.
    let pool: BlockingPool
    /// What the daemon counts (`Metrics`).
    let metrics: DaemonMetrics
    /// An account's own tables (`Query`, `Execute`).
    let data: DataService
    /// Replication with Litestream (`Replication`, `Pull`).
    let replication: ReplicationService
    let startedAt = Date()
    /// Each account's state for the metrics, re-read only for files that changed.
    let census = AccountCensus()
    /// When the bundle check of the reload running now began; nil while none runs.
    let bundleCheck = Reloadable<ContinuousClock.Instant?>(nil)

    /// A reload's bundle check began: `Status` and the metrics show it until ``reloadEnded()``.
    func reloadBegan() { bundleCheck.replace(.now) }
    /// The reload's bundle check ended.
    func reloadEnded() { bundleCheck.replace(nil) }
    /// How long the running reload's bundle check has run, in seconds; nil while none runs.
    var bundleCheckSeconds: Double? {
        bundleCheck.current.map { began in
            let (seconds, attoseconds) = (ContinuousClock.now - began).components
            return Double(seconds) + Double(attoseconds) / 1e18
        }
    }

    /// Wires the services over `stores`.
    ///
    /// - Parameter metrics: the registry every service counts in; the same one
    ///   `preferences` was given.
    /// - Parameter replication: replication with Litestream; nil for none.
    /// - Parameter sqlLimits: `limits.queryTimeoutMs` and `limits.queryMaxRows`.
    init(
        stores: Reloadable<AccountStore>, preferences: PreferenceService, pool: BlockingPool, hub: EventHub, metrics: DaemonMetrics,
        replication: ReplicationService? = nil, sqlLimits: DataService.Limits = .init(), logger: Logger
    ) {
        let replication = replication ?? .off(root: stores.current.root, logger: logger)
        self.replication = replication
        self.stores = stores
        self.preferences = preferences
        self.pool = pool
        self.hub = hub
        self.metrics = metrics
        switching = SwitchService(
            stores: stores, preferences: preferences, pool: pool, hub: hub, metrics: metrics, replication: replication, logger: logger)
        data = DataService(
            limits: sqlLimits, stores: stores, switching: switching, connections: preferences.sqlConnections, pool: pool, hub: hub)
        maintenance = MaintenanceService(
            stores: stores, switching: switching, preferences: preferences, pool: pool, metrics: metrics, replication: replication,
            logger: logger, staged: StagedExports(perUid: sqlLimits.stagedExportsPerUid, total: sqlLimits.stagedExports))
    }

    /// The daemon's metrics as Prometheus text (`Metrics`), with the figures read now
    /// (``FleetFigures``). Blocking: lists and stats the data root.
    func metricsText() -> String {
        let store = stores.current
        var fleet = FleetFigures.read(
            store: store, census: census, board: switching.board, failed: switching.failedAccounts.all(),
            active: switching.activeAccounts)
        fleet.failureRecordsLost = switching.failedAccounts.lost
        fleet.bundleCheckSeconds = bundleCheckSeconds ?? 0
        return metrics.text(active: switching.active, fleet: fleet, now: Date().timeIntervalSince1970)
    }

    /// Which daemon this is (`Info`).
    func info() -> InfoReply {
        let store = stores.current
        return InfoReply(
            version: AccountdVersion.current, pid: Int(getpid()), uptimeSeconds: Int(Date().timeIntervalSince(startedAt)),
            dataRoot: store.root.path, bundle: .init(version: store.targetVersion, fingerprint: store.bundle.fingerprint))
    }
}
