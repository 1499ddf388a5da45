import AccountdCore
import AccountdProtocol
import Configuration
import Foundation
import Logging
import Yams

/// Resolves ``DaemonSettings`` with swift-configuration.
///
/// Precedence, highest first: command-line flags, environment variables
/// (`ACCOUNTD_` + the key in upper case with `_` for `.`), the YAML config file,
/// and built-in defaults. The defaults follow systemd's `STATE_DIRECTORY`,
/// `RUNTIME_DIRECTORY` and `CONFIGURATION_DIRECTORY` when they are set.
public struct SettingsLoader: Sendable {
    /// Values given as flags; nil means "not given".
    public struct Flags: Sendable {
        public var config: String?
        public var dataRoot: String?
        public var socket: String?
        /// `--varlink-socket`.
        public var varlinkSocket: String?
        public var schema: String?
        public var logLevel: String?

        public init(
            config: String? = nil, dataRoot: String? = nil, socket: String? = nil, varlinkSocket: String? = nil, schema: String? = nil,
            logLevel: String? = nil
        ) {
            self.config = config
            self.dataRoot = dataRoot
            self.socket = socket
            self.varlinkSocket = varlinkSocket
            self.schema = schema
            self.logLevel = logLevel
        }
    }

    /// A setting that could not be used.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public var flags: Flags
    public var environment: [String: String]

    public init(flags: Flags, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.flags = flags
        self.environment = environment
    }

    /// The config file to read: `--config`, else `ACCOUNTD_CONFIG`, else
    /// `$CONFIGURATION_DIRECTORY/accountd.yaml`, else `/etc/accountd/accountd.yaml` (used only if it exists).
    public var configFile: (path: String, required: Bool) {
        if let path = flags.config { return (path, true) }
        if let path = environment["ACCOUNTD_CONFIG"] { return (path, true) }
        if let dir = environment["CONFIGURATION_DIRECTORY"]?.split(separator: ":").first { return (dir + "/accountd.yaml", false) }
        return ("/etc/accountd/accountd.yaml", false)
    }

    /// Reads every source and returns the resolved settings.
    ///
    /// In order: the config file is read and its keys checked, the sources are stacked by
    /// precedence, then each setting is read and checked.
    ///
    /// - Throws: ``Failure`` naming the setting and the source that is wrong.
    public func load() async throws -> DaemonSettings {
        try read()
    }

    /// ``load()`` where it is called: blocking (it reads the config file, and the password
    /// and group databases for the names it gives), so a running daemon calls it on a
    /// blocking-pool thread (``ReloadService``).
    ///
    /// - Throws: ``Failure`` naming the setting and the source that is wrong.
    public func read() throws -> DaemonSettings {
        let file = configFile
        if file.required && !FileManager.default.fileExists(atPath: file.path) {
            throw Failure(description: "config file \(file.path) does not exist")
        }
        let yaml = try fileProvider(file.path)
        let reader = SettingsReader(
            reader: ConfigReader(providers: [
                InMemoryProvider(name: "flags", values: flagValues),
                EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "accountd"),
                yaml,
                InMemoryProvider(name: "defaults", values: defaults),
            ]))
        return try settings(from: reader, file: file.path)
    }

    /// The config file's settings: its YAML parsed and its keys checked; `access:` is left
    /// to ``GrantConfig``.
    private func fileProvider(_ path: String) throws -> any ConfigProvider {
        // A config file with nothing in it (or only comments) means "all defaults".
        var fileIsEmpty = true
        // The file without `access:` (read by GrantConfig), when it has one.
        var withoutAccess: String?
        let text = try NamespaceConfig.text(of: path)
        if let text {
            let root: Node?
            do {
                root = try Yams.compose(yaml: text)
            } catch {
                throw YAMLProblem.failure(error, file: path, text: text)
            }
            fileIsEmpty = root == nil
            try SettingKeys.check(root, file: path)
            do {
                withoutAccess = try YAMLTextProvider.withoutAccess(root)
            } catch {
                throw Failure(description: "config file \(path) cannot be read: \(error)")
            }
        }
        do {
            guard let text, !fileIsEmpty else { return InMemoryProvider(name: "empty config file", values: [:]) }
            // The text already read, parsed as swift-configuration's `FileProvider` would: the file is read once.
            return try YAMLTextProvider(text: withoutAccess ?? text, name: path)
        } catch {
            throw Failure(description: "config file \(path) cannot be read: \(error)")
        }
    }

    /// The settings given as flags: the highest precedence.
    private var flagValues: [AbsoluteConfigKey: ConfigValue] {
        var given: [AbsoluteConfigKey: ConfigValue] = [:]
        func set(_ key: AbsoluteConfigKey, _ value: String?) {
            if let value { given[key] = .init(.string(value), isSecret: false) }
        }
        set("data.root", flags.dataRoot)
        set("socket.path", flags.socket)
        set("socket.varlink", flags.varlinkSocket)
        set("schema.dir", flags.schema)
        set("log.level", flags.logLevel)
        return given
    }

    /// systemd's `RUNTIME_DIRECTORY`, its first folder.
    private var runtimeDirectory: String? {
        environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first.map(String.init)
    }

    /// The built-in defaults: the lowest precedence.
    private var defaults: [AbsoluteConfigKey: ConfigValue] {
        let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
        return [
            "data.root": .init(.string(state ?? "/var/lib/accountd"), isSecret: false),
            "socket.path": .init(.string((runtimeDirectory ?? "/run/accountd") + "/accountd.sock"), isSecret: false),
            "socket.mode": .init(.string("0660"), isSecret: false),
            "schema.dir": .init(.string(InstalledBundle.defaultDirectory), isSecret: false),
            "log.level": .init(.string("info"), isSecret: false),
            "schema.checkTimeoutSeconds": .init(.double(60), isSecret: false),
            "requests.maxBytes": .init(.int(1 << 20), isSecret: false),
            "accounts.lockTimeoutSeconds": .init(.double(30), isSecret: false),
            "accounts.snapshotsToKeep": .init(.int(5), isSecret: false),
            "accounts.snapshotMaxAgeDays": .init(.int(0), isSecret: false),
            "accounts.checkIntegrityOnOpen": .init(.bool(true), isSecret: false),
            "accounts.walMaxBytes": .init(.int(Connections.defaultWALSizeLimit), isSecret: false),
            "metrics.accountLabels": .init(.bool(false), isSecret: false),
            "accounts.migrateConcurrency": .init(.int(min(4 * ProcessInfo.processInfo.activeProcessorCount, 64)), isSecret: false),
            "admin.users": .init(.stringArray([]), isSecret: false),
            "admin.groups": .init(.stringArray([]), isSecret: false),
            "preferences.groupCommit": .init(.bool(true), isSecret: false),
            "limits.maxConnections": .init(.int(512), isSecret: false),
            "limits.adminReservedConnections": .init(.int(3), isSecret: false),
            "limits.idleTimeoutSeconds": .init(.double(600), isSecret: false),
            "limits.queryTimeoutMs": .init(.int(5000), isSecret: false),
            "limits.queryMaxRows": .init(.int(10_000), isSecret: false),
            "limits.streamStallSeconds": .init(.double(30), isSecret: false),
            "limits.statementsPerUid": .init(.int(0), isSecret: false),
            "limits.maxConnectionsPerUid": .init(.int(0), isSecret: false),
            "limits.stagedExportsPerUid": .init(.int(2), isSecret: false),
            "limits.stagedExports": .init(.int(8), isSecret: false),
            "limits.replyBytes": .init(.int(512 << 20), isSecret: false),
            "limits.replyBytesPerUid": .init(.int(128 << 20), isSecret: false),
            "replication.litestream.syncIntervalSeconds": .init(.double(1), isSecret: false),
            "replication.litestream.program": .init(.string("litestream"), isSecret: false),
            "replication.litestream.onCreate": .init(.string("refuse"), isSecret: false),
            "replication.litestream.commandTimeoutSeconds": .init(.double(600), isSecret: false),
        ]
    }

    /// Reads and checks each setting, in the order their failures are reported.
    private func settings(from reader: SettingsReader, file: String) throws -> DaemonSettings {
        let level = try logLevel(reader)
        let mode = try socketMode(reader)
        let timeout = try reader.seconds("accounts.lockTimeoutSeconds", Self.lockTimeoutRange)
        let checkIntegrity = try reader.bool("accounts.checkIntegrityOnOpen")
        let accountLabels = try reader.bool("metrics.accountLabels")
        let checkTimeout = try reader.seconds("schema.checkTimeoutSeconds", Self.checkTimeoutRange)
        let groupCommit = try reader.bool("preferences.groupCommit")
        let idleTimeout = try reader.seconds("limits.idleTimeoutSeconds", Self.idleTimeoutRange)
        let socketPath = try absolute(reader.string("socket.path"))
        // The varlink socket's default: $RUNTIME_DIRECTORY/io.accountd, else beside the line socket.
        let varlinkDefault = (runtimeDirectory ?? (socketPath as NSString).deletingLastPathComponent) + "/io.accountd"
        let varlinkPath = reader.optionalString("socket.varlink") ?? varlinkDefault
        let replication = try replication(reader, socketPath: socketPath)
        let existing = FileManager.default.fileExists(atPath: file) ? file : nil
        let namespaces = try NamespaceConfig.read(file: existing)
        let grants = try GrantConfig.read(file: existing)
        return DaemonSettings(
            dataRoot: try absolute(reader.string("data.root")),
            socketPath: socketPath,
            varlinkSocketPath: absolute(varlinkPath),
            socketMode: mode,
            schemaDirectory: try absolute(reader.string("schema.dir")),
            logLevel: level,
            maximumRequestBytes: try reader.int("requests.maxBytes", 64...(256 << 20)),
            maximumConnections: try reader.int("limits.maxConnections", 1...100_000),
            adminReservedConnections: try reader.int("limits.adminReservedConnections", 0...1000),
            idleTimeoutSeconds: idleTimeout,
            queryTimeoutMs: try reader.int("limits.queryTimeoutMs", Self.queryTimeoutRange),
            queryMaxRows: try reader.int("limits.queryMaxRows", Self.queryMaxRowsRange),
            streams: try streamLimits(reader),
            lockTimeoutSeconds: timeout,
            snapshotsToKeep: try reader.int("accounts.snapshotsToKeep", 1...1000),
            snapshotMaxAgeDays: try reader.int("accounts.snapshotMaxAgeDays", 0...36_500),
            checkIntegrityOnOpen: checkIntegrity,
            migrateConcurrency: try reader.int("accounts.migrateConcurrency", 1...64),
            walMaxBytes: try reader.int("accounts.walMaxBytes", 0...(1 << 40)),
            metricsAccountLabels: accountLabels,
            adminUsers: try reader.ids("admin.users", lookup: { name in getpwnam(name).map { $0.pointee.pw_uid } }),
            adminGroups: try reader.ids("admin.groups", lookup: { name in getgrnam(name).map { $0.pointee.gr_gid } }),
            grants: grants,
            namespaces: namespaces,
            groupCommit: groupCommit,
            replication: replication,
            configFile: FileManager.default.fileExists(atPath: file) ? file : nil,
            bundleCheckTimeoutSeconds: checkTimeout)
    }

    /// `log.level`: one of swift-log's levels.
    private func logLevel(_ reader: SettingsReader) throws -> Logger.Level {
        let text = try reader.string("log.level")
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw Failure(description: "setting log.level is '\(text)'; use trace, debug, info, notice, warning, error or critical")
        }
        return level
    }

    /// `socket.mode`: octal text, at most 0777.
    private func socketMode(_ reader: SettingsReader) throws -> UInt32 {
        let text = try reader.string("socket.mode")
        guard let mode = UInt32(text, radix: 8), mode <= 0o777 else {
            throw Failure(description: "setting socket.mode is '\(text)'; write it in octal text, e.g. \"0660\"")
        }
        return mode
    }

    /// `replication.litestream.*`, or nil when no replica is set.
    private func replication(_ reader: SettingsReader, socketPath: String) throws -> ReplicationSettings? {
        guard let replica = reader.optionalString("replication.litestream.replica"), !replica.isEmpty else { return nil }
        guard replica.contains("://") else {
            throw Failure(
                description: "setting replication.litestream.replica is '\(SecretRedaction.redactingAddress(replica))'; give a URL Litestream takes, e.g. file:///srv/replica/accounts or s3://bucket/accounts")
        }
        // Not echoed: what is wrong may be in its password.
        if let problem = ReplicaAddress.problem(in: replica) {
            throw Failure(description: "setting replication.litestream.replica cannot be used: \(problem)")
        }
        let interval = try reader.seconds("replication.litestream.syncIntervalSeconds", Self.syncIntervalRange)
        let configDefault = (runtimeDirectory ?? (socketPath as NSString).deletingLastPathComponent) + "/litestream.yml"
        let tuning = try litestreamTuning(reader)
        let onCreateText = try reader.string("replication.litestream.onCreate")
        guard let onCreate = ReplicationSettings.OnCreate(rawValue: onCreateText) else {
            throw Failure(
                description: "setting replication.litestream.onCreate is '\(onCreateText.prefix(40))'; it must be refuse (the default) or pull")
        }
        return ReplicationSettings(
            replica: ReplicaURL(base: replica), syncIntervalSeconds: interval,
            configPath: absolute(reader.optionalString("replication.litestream.config") ?? configDefault),
            program: try reader.string("replication.litestream.program"), tuning: tuning, onCreate: onCreate,
            commandTimeoutSeconds: try reader.seconds("replication.litestream.commandTimeoutSeconds", Self.commandTimeoutRange))
    }

    /// `replication.litestream.retentionHours`, `snapshotIntervalHours` and `metricsAddress`:
    /// each optional, unset leaving Litestream's own default.
    private func litestreamTuning(_ reader: SettingsReader) throws -> ReplicationSettings.Tuning {
        var tuning = ReplicationSettings.Tuning()
        tuning.retentionHours = try reader.hours("replication.litestream.retentionHours", Self.litestreamHoursRange)
        tuning.snapshotIntervalHours = try reader.hours("replication.litestream.snapshotIntervalHours", Self.litestreamHoursRange)
        if let address = reader.optionalString("replication.litestream.metricsAddress"), !address.isEmpty {
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]), (1...65535).contains(port) else {
                throw Failure(description: "setting replication.litestream.metricsAddress is '\(address)'; give HOST:PORT, e.g. 127.0.0.1:9090")
            }
            tuning.metricsAddress = address
        }
        return tuning
    }

    /// The fair shares and the bounds of streamed replies (`limits.streamStallSeconds`,
    /// `limits.statementsPerUid`, `limits.maxConnectionsPerUid`, `limits.stagedExports*`, `limits.replyBytes*`).
    private func streamLimits(_ reader: SettingsReader) throws -> DaemonSettings.StreamLimits {
        DaemonSettings.StreamLimits(
            streamStallSeconds: try reader.seconds("limits.streamStallSeconds", 0.1...86_400),
            statementsPerUid: try reader.int("limits.statementsPerUid", 0...100_000),
            maxConnectionsPerUid: try reader.int("limits.maxConnectionsPerUid", 0...100_000),
            stagedExportsPerUid: try reader.int("limits.stagedExportsPerUid", 1...10_000),
            stagedExports: try reader.int("limits.stagedExports", 1...100_000),
            replyBytes: try reader.int("limits.replyBytes", (1 << 20)...(1 << 40)),
            replyBytesPerUid: try reader.int("limits.replyBytesPerUid", (1 << 20)...(1 << 40)))
    }

    /// `accounts.lockTimeoutSeconds`: at most an hour.
    static let lockTimeoutRange: ClosedRange<Double> = 0...3600
    /// `schema.checkTimeoutSeconds`: a second to a day.
    static let checkTimeoutRange: ClosedRange<Double> = 1...86_400
    /// `limits.queryTimeoutMs`: a millisecond to an hour.
    static let queryTimeoutRange: ClosedRange<Int> = 1...3_600_000
    /// `limits.queryMaxRows`: 1 to ten million rows in one reply without `more`.
    static let queryMaxRowsRange: ClosedRange<Int> = 1...10_000_000
    /// `replication.litestream.syncIntervalSeconds`: 1 ms to an hour. Litestream's configuration
    /// carries it in whole milliseconds (``LitestreamConfig/duration(_:)``), and a shorter one
    /// would be written `0s`, which Litestream refuses.
    static let syncIntervalRange: ClosedRange<Double> = 0.001...3600
    /// `replication.litestream.retentionHours` and `snapshotIntervalHours`: a minute to ten years.
    static let litestreamHoursRange: ClosedRange<Double> = (1.0 / 60)...87_600
    /// `replication.litestream.commandTimeoutSeconds`: 0.1 s to a day.
    static let commandTimeoutRange: ClosedRange<Double> = 0.1...86_400
    /// `limits.idleTimeoutSeconds`: 0 (never) to a week.
    static let idleTimeoutRange: ClosedRange<Double> = 0...604_800

    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}

extension SettingsLoader: CustomStringConvertible {
    /// Never the environment: it may hold secrets.
    public var description: String { "SettingsLoader(config: \(configFile.path))" }
}
