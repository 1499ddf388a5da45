import Foundation
import Yams

/// The settings accountd knows, and the check that a config file names no other.
///
/// swift-configuration reads only the keys it is asked for, so a misspelt key
/// (`snapshotToKeep`, `acounts:`) would otherwise be ignored without a word and its
/// default used. Every key of the file must be one of ``all`` (or a section holding
/// them); the `namespaces:` section is free-form: its keys are namespace names, each
/// mapping only `scope`.
enum SettingKeys {
    /// Every setting, as its dotted path.
    static let all: [String] = [
        "data.root",
        "socket.path", "socket.varlink", "socket.mode",
        "schema.dir", "schema.checkTimeoutSeconds",
        "log.level",
        "requests.maxBytes",
        "limits.maxConnections", "limits.idleTimeoutSeconds", "limits.queryTimeoutMs", "limits.queryMaxRows",
        "limits.streamStallSeconds", "limits.statementsPerUid", "limits.maxConnectionsPerUid", "limits.adminReservedConnections", "limits.stagedExportsPerUid",
        "limits.stagedExports", "limits.replyBytes", "limits.replyBytesPerUid",
        "accounts.lockTimeoutSeconds", "accounts.snapshotsToKeep", "accounts.snapshotMaxAgeDays",
        "accounts.checkIntegrityOnOpen", "accounts.migrateConcurrency", "accounts.walMaxBytes",
        "metrics.accountLabels",
        "admin.users", "admin.groups",
        "access.grants",
        "preferences.groupCommit",
        "replication.litestream.replica", "replication.litestream.syncIntervalSeconds",
        "replication.litestream.config", "replication.litestream.program",
        "replication.litestream.retentionHours", "replication.litestream.snapshotIntervalHours",
        "replication.litestream.metricsAddress", "replication.litestream.onCreate",
        "replication.litestream.commandTimeoutSeconds",
    ]

    /// The settings that take a list; every other one takes a single value.
    static let lists: Set<String> = ["admin.users", "admin.groups", "access.grants"]

    /// The section whose keys are names of the operator's choosing (see ``NamespaceConfig``).
    static let namespaces = "namespaces"

    /// Refuses a config file whose YAML names a key accountd does not know.
    ///
    /// - Parameters:
    ///   - root: the file's composed YAML; nil for an empty file.
    ///   - file: the file's path, for the message.
    /// - Throws: ``SettingsLoader/Failure`` naming the key, its line, and the nearest known setting.
    static func check(_ root: Node?, file: String) throws {
        guard let root else { return }
        guard root.mapping != nil else {
            throw SettingsLoader.Failure(description: "config file \(file) must map setting names to values, e.g. 'accounts:' then '  snapshotsToKeep: 5'")
        }
        try check(root, path: "", file: file)
    }

    private static func check(_ node: Node, path: String, file: String) throws {
        guard let mapping = node.mapping else { return }
        for (key, value) in mapping {
            let name = key.string ?? "\(key)"
            let full = path.isEmpty ? name : path + "." + name
            if full == namespaces { continue }
            if all.contains(full) {
                try checkShape(value, of: full, line: key.mark?.line, file: file)
                continue
            }
            let isSection = all.contains { $0.hasPrefix(full + ".") }
            guard isSection else { throw unknown(full, line: key.mark?.line, file: file) }
            if value.mapping != nil {
                try check(value, path: full, file: file)
            } else if value.null == nil {
                throw SettingsLoader.Failure(
                    description: "\(file) line \(key.mark?.line ?? 0): '\(full)' is a section; give its settings beneath it (\(children(of: full)))")
            }
        }
    }

    /// Refuses a list or a section given for a single-value setting (swift-configuration would
    /// read it as absent and use the default: a replica given as `[url]` would turn replication
    /// off), and a section given for a list.
    private static func checkShape(_ value: Node, of setting: String, line: Int?, file: String) throws {
        let isList = lists.contains(setting)
        if value.mapping != nil || (!isList && value.sequence != nil) {
            let wanted = isList ? "a list, e.g. [\"alice\", \"bob\"]" : "one value (text, a number, or true or false)"
            throw SettingsLoader.Failure(
                description: "\(file) line \(line ?? 0): setting '\(setting)' takes \(wanted), not \(value.mapping != nil ? "a section" : "a list"); correct it")
        }
    }

    private static func unknown(_ key: String, line: Int?, file: String) -> SettingsLoader.Failure {
        let hint = nearest(to: key).map { " (did you mean '\($0)'?)" } ?? ""
        return SettingsLoader.Failure(
            description:
                "\(file) line \(line ?? 0): unknown setting '\(key)'\(hint); correct or remove it (config/accountd.yaml and README.md list the settings)")
    }

    /// The settings directly inside `section`, for a message.
    private static func children(of section: String) -> String {
        var seen: [String] = []
        for key in all where key.hasPrefix(section + ".") {
            let child = String(key.dropFirst(section.count + 1).prefix { $0 != "." })
            if !seen.contains(child) { seen.append(child) }
        }
        return seen.joined(separator: ", ")
    }

    /// The known setting or section closest to `key` in spelling, when close enough to be a typo.
    static func nearest(to key: String) -> String? {
        var candidates = Set(all + [namespaces])
        for setting in all {
            var parts = setting.split(separator: ".").dropLast()
            while !parts.isEmpty {
                candidates.insert(parts.joined(separator: "."))
                parts = parts.dropLast()
            }
        }
        let scored = candidates.map { ($0, distance($0.lowercased(), key.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }) else { return nil }
        return best.1 <= max(2, key.count / 5) ? best.0 : nil
    }

    /// The Levenshtein distance between `a` and `b`.
    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return a.isEmpty ? b.count : previous[b.count]
    }
}
