import AccountdCore

/// Continuous off-host replication with Litestream (`replication.litestream.*`), on when
/// `replication.litestream.replica` is set.
public struct ReplicationSettings: Sendable, Equatable {
    /// The base URL of the directory replica of `accounts/` (`replication.litestream.replica`):
    /// `file://`, `s3://`, `sftp://`, anything Litestream takes. An account's replica is
    /// `<base>/<account>.sqlite`.
    public var replica: ReplicaURL
    /// How often Litestream ships new changes (`replication.litestream.syncIntervalSeconds`,
    /// default 1): the most a lost machine can cost, plus the upload's own time.
    public var syncIntervalSeconds: Double
    /// Where accountd writes Litestream's configuration (`replication.litestream.config`,
    /// default `$RUNTIME_DIRECTORY/litestream.yml`, else beside the socket).
    public var configPath: String
    /// The `litestream` program accountd runs for `Pull` (`replication.litestream.program`,
    /// default `litestream` on `PATH`).
    public var program: String

    /// Litestream's own tuning, written into its configuration; nil leaves Litestream's default.
    public struct Tuning: Sendable, Equatable {
        /// How long the replica keeps snapshots and changes (`replication.litestream.retentionHours`,
        /// Litestream's `snapshot.retention`, 24 h by default): how far back `Restore --at` reaches.
        public var retentionHours: Double?
        /// How often Litestream writes a full snapshot to the replica
        /// (`replication.litestream.snapshotIntervalHours`, its `snapshot.interval`).
        public var snapshotIntervalHours: Double?
        /// Where Litestream serves its Prometheus metrics (`replication.litestream.metricsAddress`,
        /// HOST:PORT, its `addr`); unset serves none.
        public var metricsAddress: String?

        public init(retentionHours: Double? = nil, snapshotIntervalHours: Double? = nil, metricsAddress: String? = nil) {
            self.retentionHours = retentionHours
            self.snapshotIntervalHours = snapshotIntervalHours
            self.metricsAddress = metricsAddress
        }
    }

    /// What creating an account does when the replica already holds one of that name
    /// (`replication.litestream.onCreate`).
    public enum OnCreate: String, Sendable, Equatable {
        /// Refuse, naming `accountctl pull` (the default): a new empty file would become the
        /// replica's newest state within a second and hide the one there.
        case refuse
        /// Pull the replica's copy instead, then open it.
        case pull
    }

    /// Litestream's tuning.
    public var tuning: Tuning
    /// What creating an account the replica holds does.
    public var onCreate: OnCreate
    /// How long one run of Litestream (a pull, a restore, a look at the replica) may take
    /// before it is killed and the operation fails, changing nothing
    /// (`replication.litestream.commandTimeoutSeconds`, default 600); a listing of the replica
    /// is bounded by 30 s at most (``LitestreamProgram/listingTimeout``).
    public var commandTimeoutSeconds: Double

    public init(
        replica: ReplicaURL, syncIntervalSeconds: Double = 1, configPath: String, program: String = "litestream", tuning: Tuning = Tuning(),
        onCreate: OnCreate = .refuse, commandTimeoutSeconds: Double = 600
    ) {
        self.replica = replica
        self.syncIntervalSeconds = syncIntervalSeconds
        self.configPath = configPath
        self.program = program
        self.tuning = tuning
        self.onCreate = onCreate
        self.commandTimeoutSeconds = commandTimeoutSeconds
    }

    /// The `litestream` program with these settings' deadline, its runs enrolled in `runs`
    /// (which the daemon's shutdown stops).
    public func litestream(runs: LitestreamRuns? = nil) -> LitestreamProgram {
        LitestreamProgram(executable: program, timeout: .milliseconds(Int64((commandTimeoutSeconds * 1000).rounded())), runs: runs)
    }

    /// Litestream's control socket, which the written configuration turns on: `litestream.sock`
    /// beside the configuration file.
    public var controlSocketPath: String {
        let folder = configPath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return (folder.isEmpty ? "." : folder) + "/litestream.sock"
    }
}
