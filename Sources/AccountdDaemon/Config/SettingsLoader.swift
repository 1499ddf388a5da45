import AccountdCore
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
    /// - Throws: ``Failure`` naming the setting and the source that is wrong.
    public func load() async throws -> DaemonSettings {
        let file = configFile
        if file.required && !FileManager.default.fileExists(atPath: file.path) {
            throw Failure(description: "config file \(file.path) does not exist")
        }
        // A config file with nothing in it (or only comments) means "all defaults".
        var fileIsEmpty = true
        // The file without `access:` (read by GrantConfig), when it has one.
        var withoutAccess: String?
        if let text = try NamespaceConfig.text(of: file.path) {
            let root: Node?
            do {
                root = try Yams.compose(yaml: text)
            } catch {
                throw Failure(description: "config file \(file.path) is not valid YAML: \(error)")
            }
            fileIsEmpty = root == nil
            try SettingKeys.check(root, file: file.path)
            do {
                withoutAccess = try YAMLTextProvider.withoutAccess(root)
            } catch {
                throw Failure(description: "config file \(file.path) cannot be read: \(error)")
            }
        }
        let yaml: any ConfigProvider
        do {
            if fileIsEmpty {
                yaml = InMemoryProvider(name: "empty config file", values: [:])
            } else if let withoutAccess {
                yaml = try YAMLTextProvider(text: withoutAccess, name: file.path)
            } else {
                yaml = try await FileProvider<YAMLSnapshot>(filePath: .init(file.path), allowMissing: true)
            }
        } catch {
            throw Failure(description: "config file \(file.path) cannot be read: \(error)")
        }
        var given: [AbsoluteConfigKey: ConfigValue] = [:]
        func set(_ key: AbsoluteConfigKey, _ value: String?) {
            if let value { given[key] = .init(.string(value), isSecret: false) }
        }
        set("data.root", flags.dataRoot)
        set("socket.path", flags.socket)
        set("socket.varlink", flags.varlinkSocket)
        set("schema.dir", flags.schema)
        set("log.level", flags.logLevel)

        let runtime = environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first.map(String.init)
        let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
        let defaults: [AbsoluteConfigKey: ConfigValue] = [
            "data.root": .init(.string(state ?? "/var/lib/accountd"), isSecret: false),
            "socket.path": .init(.string((runtime ?? "/run/accountd") + "/accountd.sock"), isSecret: false),
            "socket.mode": .init(.string("0660"), isSecret: false),
            "schema.dir": .init(.string(InstalledBundle.defaultDirectory), isSecret: false),
            "log.level": .init(.string("info"), isSecret: false),
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
            "limits.idleTimeoutSeconds": .init(.double(600), isSecret: false),
            "limits.queryTimeoutMs": .init(.int(5000), isSecret: false),
            "limits.queryMaxRows": .init(.int(10_000), isSecret: false),
            "replication.litestream.syncIntervalSeconds": .init(.double(1), isSecret: false),
            "replication.litestream.program": .init(.string("litestream"), isSecret: false),
            "replication.litestream.onCreate": .init(.string("refuse"), isSecret: false),
        ]
        let reader = ConfigReader(providers: [
            InMemoryProvider(name: "flags", values: given),
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "accountd"),
            yaml,
            InMemoryProvider(name: "defaults", values: defaults),
        ])

        func string(_ key: ConfigKey) throws -> String {
            do { return try reader.requiredString(forKey: key) } catch {
                throw Failure(description: "setting \(key) is not valid text: \(error)")
            }
        }
        func int(_ key: ConfigKey, _ range: ClosedRange<Int>) throws -> Int {
            let value: Int
            do { value = try reader.requiredInt(forKey: key) } catch {
                // 2.5 or 1e300 (a YAML float), or text: named with the range, like a number beyond it.
                let given = reader.double(forKey: key).map(Self.text) ?? reader.string(forKey: key).map { "'\($0)'" } ?? "not a number"
                throw Failure(description: "setting \(key) is \(given); it must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            guard range.contains(value) else {
                throw Failure(description: "setting \(key) is \(value); it must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
        // A number of seconds: finite and within `range` (NaN, infinities and values beyond it refused).
        func seconds(_ key: ConfigKey, _ range: ClosedRange<Double>) throws -> Double {
            let value: Double
            do { value = try reader.requiredDouble(forKey: key) } catch {
                throw Failure(description: "setting \(key) must be a number of seconds: \(error)")
            }
            guard value.isFinite, range.contains(value) else {
                throw Failure(
                    description:
                        "setting \(key) is \(Self.text(value)); it must be a number of seconds from \(Self.text(range.lowerBound)) to \(Self.text(range.upperBound))")
            }
            return value
        }
        func ids(_ key: ConfigKey, lookup: (String) -> UInt32?) throws -> [UInt32] {
            let names: [String]
            do { names = try reader.requiredStringArray(forKey: key) } catch {
                throw Failure(description: "setting \(key) must be a list of names or numeric ids, quoted in YAML: \(error)")
            }
            // An empty list, or an empty item ("a,,b" in the environment), names no one.
            return try names.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map { name in
                let found: UInt32?
                do { found = try NameOrID.resolve(name, kind: "user or group", lookup: lookup) } catch {
                    throw Failure(description: "setting \(key): \((error as? NameOrID.Ambiguous)?.message ?? "\(error)")")
                }
                guard let id = found else { throw Failure(description: "setting \(key): no such user or group '\(name)'") }
                return id
            }
        }

        let levelText = try string("log.level")
        guard let level = Logger.Level(rawValue: levelText.lowercased()) else {
            throw Failure(description: "setting log.level is '\(levelText)'; use trace, debug, info, notice, warning, error or critical")
        }
        let modeText = try string("socket.mode")
        guard let mode = UInt32(modeText, radix: 8), mode <= 0o777 else {
            throw Failure(description: "setting socket.mode is '\(modeText)'; write it in octal text, e.g. \"0660\"")
        }
        let timeout = try seconds("accounts.lockTimeoutSeconds", Self.lockTimeoutRange)
        let checkIntegrity: Bool
        do { checkIntegrity = try reader.requiredBool(forKey: "accounts.checkIntegrityOnOpen") } catch {
            throw Failure(description: "setting accounts.checkIntegrityOnOpen must be true or false: \(error)")
        }
        let accountLabels: Bool
        do { accountLabels = try reader.requiredBool(forKey: "metrics.accountLabels") } catch {
            throw Failure(description: "setting metrics.accountLabels must be true or false: \(error)")
        }
        let groupCommit: Bool
        do { groupCommit = try reader.requiredBool(forKey: "preferences.groupCommit") } catch {
            throw Failure(description: "setting preferences.groupCommit must be true or false: \(error)")
        }
        let idleTimeout = try seconds("limits.idleTimeoutSeconds", Self.idleTimeoutRange)
        let socketPath = try absolute(string("socket.path"))
        // The varlink socket's default: $RUNTIME_DIRECTORY/io.accountd, else beside the line socket.
        let varlinkDefault = (runtime ?? (socketPath as NSString).deletingLastPathComponent) + "/io.accountd"
        let varlinkPath = reader.string(forKey: "socket.varlink") ?? varlinkDefault
        var replication: ReplicationSettings?
        if let replica = reader.string(forKey: "replication.litestream.replica"), !replica.isEmpty {
            guard replica.contains("://") else {
                throw Failure(
                    description: "setting replication.litestream.replica is '\(SecretRedaction.redactingAddress(replica))'; give a URL Litestream takes, e.g. file:///srv/replica/accounts or s3://bucket/accounts")
            }
            let interval = try seconds("replication.litestream.syncIntervalSeconds", Self.syncIntervalRange)
            let configDefault = (runtime ?? (socketPath as NSString).deletingLastPathComponent) + "/litestream.yml"
            var tuning = ReplicationSettings.Tuning()
            // Optional: unset leaves Litestream's own default.
            func hours(_ key: ConfigKey) throws -> Double? {
                guard reader.string(forKey: key) != nil || reader.double(forKey: key) != nil else { return nil }
                let range = Self.litestreamHoursRange
                guard let value = reader.double(forKey: key), value.isFinite, range.contains(value) else {
                    let given = reader.double(forKey: key).map(Self.text) ?? reader.string(forKey: key).map { "'\($0.prefix(40))'" } ?? "not a number"
                    throw Failure(description: "setting \(key) is \(given); it must be a number of hours from 0.0167 (a minute) to \(Self.text(range.upperBound))")
                }
                return value
            }
            tuning.retentionHours = try hours("replication.litestream.retentionHours")
            tuning.snapshotIntervalHours = try hours("replication.litestream.snapshotIntervalHours")
            if let address = reader.string(forKey: "replication.litestream.metricsAddress"), !address.isEmpty {
                guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]), (1...65535).contains(port) else {
                    throw Failure(description: "setting replication.litestream.metricsAddress is '\(address)'; give HOST:PORT, e.g. 127.0.0.1:9090")
                }
                tuning.metricsAddress = address
            }
            let onCreateText = try string("replication.litestream.onCreate")
            guard let onCreate = ReplicationSettings.OnCreate(rawValue: onCreateText) else {
                throw Failure(
                    description: "setting replication.litestream.onCreate is '\(onCreateText.prefix(40))'; it must be refuse (the default) or pull")
            }
            replication = ReplicationSettings(
                replica: ReplicaURL(base: replica), syncIntervalSeconds: interval,
                configPath: absolute(reader.string(forKey: "replication.litestream.config") ?? configDefault),
                program: try string("replication.litestream.program"), tuning: tuning, onCreate: onCreate)
        }
        let namespaces = try NamespaceConfig.read(file: FileManager.default.fileExists(atPath: file.path) ? file.path : nil)
        let grants = try GrantConfig.read(file: FileManager.default.fileExists(atPath: file.path) ? file.path : nil)
        return DaemonSettings(
            dataRoot: try absolute(string("data.root")),
            socketPath: socketPath,
            varlinkSocketPath: absolute(varlinkPath),
            socketMode: mode,
            schemaDirectory: try absolute(string("schema.dir")),
            logLevel: level,
            maximumRequestBytes: try int("requests.maxBytes", 64...(256 << 20)),
            maximumConnections: try int("limits.maxConnections", 1...100_000),
            idleTimeoutSeconds: idleTimeout,
            queryTimeoutMs: try int("limits.queryTimeoutMs", Self.queryTimeoutRange),
            queryMaxRows: try int("limits.queryMaxRows", Self.queryMaxRowsRange),
            lockTimeoutSeconds: timeout,
            snapshotsToKeep: try int("accounts.snapshotsToKeep", 1...1000),
            snapshotMaxAgeDays: try int("accounts.snapshotMaxAgeDays", 0...36_500),
            checkIntegrityOnOpen: checkIntegrity,
            migrateConcurrency: try int("accounts.migrateConcurrency", 1...64),
            walMaxBytes: try int("accounts.walMaxBytes", 0...(1 << 40)),
            metricsAccountLabels: accountLabels,
            adminUsers: try ids("admin.users", lookup: { name in getpwnam(name).map { $0.pointee.pw_uid } }),
            adminGroups: try ids("admin.groups", lookup: { name in getgrnam(name).map { $0.pointee.gr_gid } }),
            grants: grants,
            namespaces: namespaces,
            groupCommit: groupCommit,
            replication: replication,
            configFile: FileManager.default.fileExists(atPath: file.path) ? file.path : nil)
    }

    /// `accounts.lockTimeoutSeconds`: at most an hour.
    static let lockTimeoutRange: ClosedRange<Double> = 0...3600
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
    /// `limits.idleTimeoutSeconds`: 0 (never) to a week.
    static let idleTimeoutRange: ClosedRange<Double> = 0...604_800

    /// `30` for 30.0, `0.5` for 0.5, `1e+300`, `inf`: a number as a person writes it.
    private static func text(_ value: Double) -> String {
        value.isFinite && abs(value) < 1e15 && value == value.rounded() ? String(Int(value)) : String(value)
    }

    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}

extension SettingsLoader: CustomStringConvertible {
    /// Never the environment: it may hold secrets.
    public var description: String { "SettingsLoader(config: \(configFile.path))" }
}
