import AccountdCore
import Logging

/// Everything the daemon is configured with, resolved from flags, environment,
/// the config file and built-in defaults, in that order of precedence.
public struct DaemonSettings: Sendable {
    /// The data root (`data.root`, `ACCOUNTD_DATA_ROOT`, `--data-root`).
    public var dataRoot: String
    /// The socket path (`socket.path`, `ACCOUNTD_SOCKET_PATH`, `--socket`).
    public var socketPath: String
    /// The varlink socket's path (`socket.varlink`, `ACCOUNTD_SOCKET_VARLINK`, `--varlink-socket`);
    /// by default `$RUNTIME_DIRECTORY/io.accountd`, or `io.accountd` beside the line socket
    /// when `RUNTIME_DIRECTORY` is not set. It has the line socket's mode.
    public var varlinkSocketPath: String
    /// The socket's file mode (`socket.mode`, octal text, default "0660").
    public var socketMode: UInt32
    /// The schema bundle folder (`schema.dir`, `ACCOUNTD_SCHEMA_DIR`, `--schema`).
    public var schemaDirectory: String
    /// The log level (`log.level`, `ACCOUNTD_LOG_LEVEL`, `--log-level`).
    public var logLevel: Logger.Level
    /// The longest request line accepted, in bytes (`requests.maxBytes`, default 1 MiB).
    public var maximumRequestBytes: Int
    /// The most connections served at once (`limits.maxConnections`, default 512); one more
    /// gets `TooManyConnections` and is closed.
    public var maximumConnections: Int
    /// Connections only admins may take beyond `maximumConnections`
    /// (`limits.adminReservedConnections`, default 3), so that the metrics unit and an operator
    /// still reach a daemon whose connections others hold, as PostgreSQL's
    /// `superuser_reserved_connections`.
    public var adminReservedConnections = 3
    /// A connection with no traffic and nothing in progress for this long is closed
    /// (`limits.idleTimeoutSeconds`, default 600; 0 for never).
    public var idleTimeoutSeconds: Double
    /// A `Query` or `Execute` statement running longer than this many milliseconds is
    /// interrupted with `QueryTimeout` (`limits.queryTimeoutMs`, default 5000).
    public var queryTimeoutMs: Int = 5000
    /// The most rows one `Query` reply without `more` carries; past it the reply says
    /// `truncated: true` (`limits.queryMaxRows`, default 10000).
    public var queryMaxRows: Int = 10_000
    /// The fair shares per caller uid and the bounds of streamed replies.
    public var streams = StreamLimits()
    /// How long an operation waits for another on the same account (`accounts.lockTimeoutSeconds`).
    public var lockTimeoutSeconds: Double
    /// Snapshots kept per account (`accounts.snapshotsToKeep`).
    public var snapshotsToKeep: Int
    /// Snapshots older than this many days go when the next one of the account is taken
    /// (`accounts.snapshotMaxAgeDays`, default 0: by count only). See `SnapshotRetention`.
    public var snapshotMaxAgeDays: Int
    /// Run `quick_check` when an account is first opened (`accounts.checkIntegrityOnOpen`).
    public var checkIntegrityOnOpen: Bool
    /// How many accounts `Migrate` works on at once (`accounts.migrateConcurrency`, default: four times
    /// the core count, so that some accounts' flushes overlap the others' work). The blocking pool
    /// has a thread more for each.
    public var migrateConcurrency: Int
    /// The size a WAL is cut back to whenever SQLite starts it over after a checkpoint, in
    /// bytes (`accounts.walMaxBytes`, default 64 MiB; SQLite's `journal_size_limit`). A
    /// migration's WAL is checkpointed and truncated when it commits, whatever this says.
    public var walMaxBytes: Int = Connections.defaultWALSizeLimit
    /// Label `accountd_active_account` with the account's name (`metrics.accountLabels`,
    /// default false): one series per account that was ever active, so off on fleets.
    public var metricsAccountLabels = false
    /// Admin peers by uid, besides root and the daemon's own uid (`admin.users`).
    public var adminUsers: [UInt32]
    /// Admin peers by group id (`admin.groups`).
    public var adminGroups: [UInt32]
    /// What peers that are not admins may do (`access.grants`; none by default). See ``AccessGrant``.
    public var grants: [AccessGrant] = []
    /// The key-value namespaces (`namespaces:` in the config; default: user, default, switch, dynamic, memory).
    public var namespaces: [NamespaceDeclaration]
    /// Share transactions between concurrent Sets (`preferences.groupCommit`, default true).
    /// Off gives every Set a transaction of its own, for comparison in benchmarks.
    public var groupCommit: Bool
    /// Replication with Litestream; nil (the default) when `replication.litestream.replica` is not set.
    public var replication: ReplicationSettings?
    /// The config file that was read, if any.
    public var configFile: String?
    /// How long a bundle's check (its migrations run on an empty database) may run before it
    /// is stopped: the reload is refused, or the daemon exits at start-up, naming the file and
    /// line where it stood (`schema.checkTimeoutSeconds`, default 60; 1 to 86400).
    public var bundleCheckTimeoutSeconds: Double = 60

    /// ``bundleCheckTimeoutSeconds`` as a duration.
    public var bundleCheckTimeLimit: Duration { .milliseconds(Int64(bundleCheckTimeoutSeconds * 1000)) }

    public var storeOptions: AccountStore.Options {
        var options = AccountStore.Options()
        options.snapshotsToKeep = snapshotsToKeep
        options.snapshotMaxAgeDays = snapshotMaxAgeDays
        options.lockTimeout = .milliseconds(Int64(lockTimeoutSeconds * 1000))
        options.checkIntegrityOnOpen = checkIntegrityOnOpen
        return options
    }
}

extension DaemonSettings {
    /// Each caller uid's share of what the daemon has, and how long a streamed reply waits
    /// for its client (docs/RELIABILITY.md, guarantee 7). Read at start.
    public struct StreamLimits: Sendable, Equatable {
        /// A streamed `Query` or `Export` whose client takes none of its replies for this many
        /// seconds is ended with `QueryTimeout`, and its snapshot or staged copy released
        /// (`limits.streamStallSeconds`, default 30).
        public var streamStallSeconds: Double = 30
        /// How many of one uid's statements (and pieces of streams) run on the blocking pool at
        /// once; the rest wait their turn (`limits.statementsPerUid`, default 0: half the threads statements may take).
        public var statementsPerUid = 0
        /// How many connections one uid may have open (`limits.maxConnectionsPerUid`, default
        /// 0: half of `limits.maxConnections`).
        public var maxConnectionsPerUid = 0
        /// How many `Export sqlite` copies one uid may have staged at once (`limits.stagedExportsPerUid`, default 2).
        public var stagedExportsPerUid = 2
        /// How many `Export sqlite` copies may be staged at once in all (`limits.stagedExports`, default 8).
        public var stagedExports = 8
        /// How many bytes of `Query` replies not yet read by their clients the daemon holds at
        /// once in all (`limits.replyBytes`, default 512 MiB); a reply past it gets `AccountBusy`.
        public var replyBytes = 512 << 20
        /// The same for one caller uid (`limits.replyBytesPerUid`, default 128 MiB).
        public var replyBytesPerUid = 128 << 20

        public init(
            streamStallSeconds: Double = 30, statementsPerUid: Int = 0, maxConnectionsPerUid: Int = 0, stagedExportsPerUid: Int = 2,
            stagedExports: Int = 8, replyBytes: Int = 512 << 20, replyBytesPerUid: Int = 128 << 20
        ) {
            self.replyBytes = replyBytes
            self.replyBytesPerUid = replyBytesPerUid
            self.streamStallSeconds = streamStallSeconds
            self.statementsPerUid = statementsPerUid
            self.maxConnectionsPerUid = maxConnectionsPerUid
            self.stagedExportsPerUid = stagedExportsPerUid
            self.stagedExports = stagedExports
        }

        /// `statementsPerUid` in force when app statements may take `threads` of the pool: half of them when 0.
        public func statements(threads: Int) -> Int { statementsPerUid > 0 ? statementsPerUid : max(1, threads / 2) }

        /// `maxConnectionsPerUid` in force under `maxConnections`: half of it when 0.
        public func connections(maxConnections: Int) -> Int {
            maxConnectionsPerUid > 0 ? min(maxConnectionsPerUid, maxConnections) : max(1, maxConnections / 2)
        }
    }
}
