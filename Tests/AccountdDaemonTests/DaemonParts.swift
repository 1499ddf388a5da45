import AccountdCore
import AccountdTestSupport
import Logging

@testable import AccountdDaemon

/// The daemon's parts behind a connection, wired as `Daemon.run` wires them but without
/// a socket: a store over a data root at a temporary path with the sample bundle, the
/// preference service, the blocking pool, the account service and the dispatcher.
final class DaemonParts {
    let hub = EventHub()
    let dispatcher: Dispatcher
    private let pool = BlockingPool(threads: 2)
    private let preferences: PreferenceService

    /// Builds the parts over a new data root at `path`.
    init(dataRoot path: String) throws {
        let root = try DataRoot(path)
        let store = AccountStore(root: root, bundle: try SchemaBundle.load(from: Repository.sampleBundle), options: AccountStore.Options())
        preferences = try PreferenceService(declarations: [], root: store.root, hub: hub, groupCommit: true, pool: pool)
        let logger = Logger(label: "test")
        let service = AccountService(store: store, preferences: preferences, pool: pool, hub: hub, logger: logger)
        service.setPhase(.serving)
        dispatcher = Dispatcher(
            service: service, policy: Reloadable(AccessPolicy(adminUsers: [], adminGroups: [])), logger: logger,
            temporaryDirectory: path + "/tmp", migrateConcurrency: 1)
    }

    /// Runs `body` with new parts over a data root at `path`, then closes the preference
    /// databases and stops the pool, whether `body` threw or not.
    static func with<T>(dataRoot path: String, _ body: (DaemonParts) throws -> T) async throws -> T {
        let parts = try DaemonParts(dataRoot: path)
        let result = Result { try body(parts) }
        parts.preferences.closeAll()
        try await parts.pool.shutdown()
        return try result.get()
    }
}
