import AccountdCore
import AccountdTestSupport
import Logging

@testable import AccountdDaemon

/// The daemon's parts behind a connection, wired as `Daemon.run` wires them but without
/// a socket: a store over a data root at a temporary path with the sample bundle, the
/// preference service, the blocking pool, the services and the dispatcher.
final class DaemonParts: Sendable {
    let hub = EventHub()
    /// These parts' own metrics registry (never the process-wide one).
    let metrics = DaemonMetrics()
    let dispatcher: Dispatcher
    private let pool = BlockingPool(threads: 2)
    private let preferences: PreferenceService

    /// The store's options in tests: an operation waits up to an hour for an account, as
    /// tests hold accounts on purpose, and under a loaded test run (async tests starved of
    /// threads for minutes) the default 30 s would turn a held request into `AccountBusy`.
    static var patient: AccountStore.Options {
        var options = AccountStore.Options()
        options.lockTimeout = .seconds(3600)
        return options
    }

    /// Builds the parts over a new data root at `path`, with `namespaces` configured and the
    /// store's `options`.
    init(dataRoot path: String, namespaces: [NamespaceDeclaration] = [], options: AccountStore.Options = DaemonParts.patient) throws {
        let root = try DataRoot(path)
        let store = AccountStore(root: root, bundle: try SchemaBundle.load(from: Repository.sampleBundle), options: options)
        preferences = try PreferenceService(declarations: namespaces, root: store.root, hub: hub, groupCommit: true, pool: pool, metrics: metrics)
        let logger = Logger(label: "test")
        let services = Services(stores: Reloadable(store), preferences: preferences, pool: pool, hub: hub, metrics: metrics, logger: logger)
        dispatcher = Dispatcher(
            services: services, policy: Reloadable(AccessPolicy(adminUsers: [], adminGroups: [])), logger: logger, migrateConcurrency: 1)
    }

    /// Runs `body` with new parts over a data root at `path`, then closes the preference
    /// databases and stops the pool, whether `body` threw or not.
    static func with<T>(
        dataRoot path: String, namespaces: [NamespaceDeclaration] = [], options: AccountStore.Options = DaemonParts.patient,
        _ body: (DaemonParts) async throws -> T
    ) async throws -> T {
        let parts = try DaemonParts(dataRoot: path, namespaces: namespaces, options: options)
        let result: Result<T, any Error>
        do { result = .success(try await body(parts)) } catch { result = .failure(error) }
        await parts.preferences.closeAll()
        try await parts.pool.shutdown()
        return try result.get()
    }
}
