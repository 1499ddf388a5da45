import AccountdCore

/// One setting whose value differs between the settings in force and those a reload read.
///
/// A reload compares what it read with what is in force (never with what the daemon
/// started with), so a value changed back by a later reload is seen as a change too.
struct SettingChange: Sendable, CustomStringConvertible {
    /// The setting's dotted key, e.g. `accounts.snapshotsToKeep`.
    var key: String
    /// The value in force, as text.
    var old: String
    /// The value read, as text.
    var new: String
    /// Whether a reload puts the new value in force; the others wait for a restart.
    var takesEffectAtReload: Bool

    var description: String { "\(key) \(old) -> \(new)" }

    /// The settings that differ from `old` to `new`, in the order the config file lists them.
    static func between(_ old: DaemonSettings, _ new: DaemonSettings) -> [SettingChange] {
        var changes: [SettingChange] = []
        func compare<Value: Equatable>(_ key: String, _ path: KeyPath<DaemonSettings, Value>, reload: Bool, text: (Value) -> String = { "\($0)" }) {
            let (before, after) = (old[keyPath: path], new[keyPath: path])
            if before != after { changes.append(SettingChange(key: key, old: text(before), new: text(after), takesEffectAtReload: reload)) }
        }
        compare("data.root", \.dataRoot, reload: false)
        compare("socket.path", \.socketPath, reload: false)
        compare("socket.varlink", \.varlinkSocketPath, reload: false)
        compare("socket.mode", \.socketMode, reload: false) { "0" + String($0, radix: 8) }
        compare("schema.dir", \.schemaDirectory, reload: true)
        compare("schema.checkTimeoutSeconds", \.bundleCheckTimeoutSeconds, reload: true, text: number)
        compare("log.level", \.logLevel, reload: true) { $0.rawValue }
        compare("requests.maxBytes", \.maximumRequestBytes, reload: false)
        compare("limits.maxConnections", \.maximumConnections, reload: false)
        compare("limits.adminReservedConnections", \.adminReservedConnections, reload: false)
        compare("limits.idleTimeoutSeconds", \.idleTimeoutSeconds, reload: false, text: number)
        compare("limits.queryTimeoutMs", \.queryTimeoutMs, reload: false)
        compare("limits.queryMaxRows", \.queryMaxRows, reload: false)
        compare("limits.streamStallSeconds", \.streams.streamStallSeconds, reload: false, text: number)
        compare("limits.statementsPerUid", \.streams.statementsPerUid, reload: false)
        compare("limits.maxConnectionsPerUid", \.streams.maxConnectionsPerUid, reload: false)
        compare("limits.stagedExportsPerUid", \.streams.stagedExportsPerUid, reload: false)
        compare("limits.stagedExports", \.streams.stagedExports, reload: false)
        compare("limits.replyBytes", \.streams.replyBytes, reload: false)
        compare("limits.replyBytesPerUid", \.streams.replyBytesPerUid, reload: false)
        compare("accounts.lockTimeoutSeconds", \.lockTimeoutSeconds, reload: true, text: number)
        compare("accounts.snapshotsToKeep", \.snapshotsToKeep, reload: true)
        compare("accounts.snapshotMaxAgeDays", \.snapshotMaxAgeDays, reload: true)
        compare("accounts.checkIntegrityOnOpen", \.checkIntegrityOnOpen, reload: true)
        compare("accounts.migrateConcurrency", \.migrateConcurrency, reload: false)
        compare("accounts.walMaxBytes", \.walMaxBytes, reload: true)
        compare("metrics.accountLabels", \.metricsAccountLabels, reload: false)
        compare("admin.users", \.adminUsers, reload: true)
        compare("admin.groups", \.adminGroups, reload: true)
        compare("access.grants", \.grants, reload: true) { $0.isEmpty ? "none" : $0.map(\.description).joined(separator: "; ") }
        compare("namespaces", \.namespaces, reload: false) { $0.map { "\($0.name):\($0.scope.rawValue)" }.joined(separator: ",") }
        compare("preferences.groupCommit", \.groupCommit, reload: false)
        // Never the replica's URL in a log line: it may carry a password.
        if old.replication != new.replication {
            let (before, after) = (old.replication == nil ? "off" : "on", new.replication == nil ? "off" : "on")
            changes.append(
                SettingChange(key: "replication.litestream", old: before, new: before == after ? "changed" : after, takesEffectAtReload: true))
        }
        return changes
    }
}

/// `30` for 30.0, `0.5` for 0.5: a number of seconds as the config file has it.
private func number(_ value: Double) -> String {
    value.isFinite && abs(value) < 1e15 && value == value.rounded() ? String(Int(value)) : String(value)
}

extension DaemonSettings {
    /// These settings with every value a reload may change taken from `new`; the rest
    /// (data root, sockets, limits, namespaces) stay until a restart.
    func reloading(_ new: DaemonSettings) -> DaemonSettings {
        var settings = self
        settings.schemaDirectory = new.schemaDirectory
        settings.bundleCheckTimeoutSeconds = new.bundleCheckTimeoutSeconds
        settings.logLevel = new.logLevel
        settings.lockTimeoutSeconds = new.lockTimeoutSeconds
        settings.snapshotsToKeep = new.snapshotsToKeep
        settings.snapshotMaxAgeDays = new.snapshotMaxAgeDays
        settings.checkIntegrityOnOpen = new.checkIntegrityOnOpen
        settings.walMaxBytes = new.walMaxBytes
        settings.adminUsers = new.adminUsers
        settings.adminGroups = new.adminGroups
        settings.grants = new.grants
        settings.replication = new.replication
        settings.configFile = new.configFile
        return settings
    }
}
