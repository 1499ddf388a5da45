@testable import AccountdDaemon
import AccountdCore
import AccountdProtocol
import Foundation
import Logging

/// The daemon's parts wired as `Daemon.run` wires them, minus the socket: a data root,
/// the store, the preference service, the blocking pool, the services and the
/// dispatcher, configured like `config/accountd.yaml`, on a data root that starts with
/// the fixtures' accounts.
final class FuzzDaemon {
    /// The namespaces of `config/accountd.yaml`.
    static let namespaces: [NamespaceDeclaration] = [
        NamespaceDeclaration(name: "user", scope: .account), NamespaceDeclaration(name: "default", scope: .account),
        NamespaceDeclaration(name: "switch", scope: .device), NamespaceDeclaration(name: "dynamic", scope: .device),
        NamespaceDeclaration(name: "memory", scope: .memory),
    ]

    let root: DataRoot
    let services: Services
    let dispatcher: Dispatcher
    private let pool: BlockingPool
    private let preferences: PreferenceService

    /// Builds the daemon on a new data root at `path`.
    init(dataRoot path: String, fixtures: Fixtures, logger: Logger) throws {
        root = try DataRoot(path)
        var options = AccountStore.Options()
        options.snapshotsToKeep = 5
        options.lockTimeout = .seconds(30)
        options.checkIntegrityOnOpen = true
        try fixtures.populate(root, options: options)

        let store = AccountStore(root: root, bundle: fixtures.bundle, options: options)
        pool = BlockingPool(threads: max(8, ProcessInfo.processInfo.activeProcessorCount * 4))
        let hub = EventHub()
        let metrics = DaemonMetrics()
        preferences = try PreferenceService(
            declarations: Self.namespaces, root: store.root, hub: hub, groupCommit: true, pool: pool, metrics: metrics)
        // Short limits: an input that runs a statement for long costs the fuzzer 50 ms, not 5 s.
        services = Services(
            stores: Reloadable(store), preferences: preferences, pool: pool, hub: hub, metrics: metrics,
            sqlLimits: DataService.Limits(timeoutMs: 50, maxRows: 100), logger: logger)
        dispatcher = Dispatcher(
            services: services, policy: Reloadable(AccessPolicy(adminUsers: [], adminGroups: [])), logger: logger, migrateConcurrency: 2)
    }

    /// Closes the preference databases and stops the pool, as the daemon does on SIGTERM.
    func shutDown() {
        let (preferences, pool) = (preferences, pool)
        // The tables' last commits run on the pool: closed before it stops.
        Blocking.wait {
            await preferences.closeAll()
            try? await pool.shutdown()
        }
    }
}
