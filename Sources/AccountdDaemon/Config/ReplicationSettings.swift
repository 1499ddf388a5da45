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

    public init(replica: ReplicaURL, syncIntervalSeconds: Double = 1, configPath: String, program: String = "litestream") {
        self.replica = replica
        self.syncIntervalSeconds = syncIntervalSeconds
        self.configPath = configPath
        self.program = program
    }

    /// Litestream's control socket, which the written configuration turns on: `litestream.sock`
    /// beside the configuration file.
    public var controlSocketPath: String {
        let folder = configPath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return (folder.isEmpty ? "." : folder) + "/litestream.sock"
    }
}
