import AccountdCore
import AccountdProtocol
import Foundation

/// The Litestream configuration accountd writes for `litestream replicate` (the
/// `accountd-litestream` unit), from ``ReplicationSettings`` and the data root.
///
/// - `accounts/` as one directory entry: pattern `*.sqlite` (staging files and
///   Litestream's own `.<name>-litestream` folders never match), `watch: true`, so an
///   account created, pulled or restored after Litestream started is replicated at once,
///   and one removed is let go.
/// - `device.sqlite` as a database of its own, replicated to `<base>/.device.sqlite`.
/// - The control socket beside the file, mode 0600 (accountd and Litestream run as the same
///   user): accountd reads the replication status there and asks for a final sync before it
///   removes a file.
///
/// Written at start and on every reload, atomically; an operator's edits are overwritten
/// (change accountd's settings instead).
struct LitestreamConfig {
    var settings: ReplicationSettings
    var root: DataRoot

    /// The YAML text.
    var text: String {
        let interval = Self.duration(settings.syncIntervalSeconds)
        return """
            # Written by accountd from replication.litestream in its configuration; edits here are
            # overwritten at the next start or reload. Run with: litestream replicate -config \(settings.configPath)
            \(tuning)socket:
              enabled: true
              path: \(Self.quoted(settings.controlSocketPath))
              permissions: 0600
            dbs:
              - dir: \(Self.quoted(root.accountsDirectory))
                pattern: "*.sqlite"
                watch: true
                replica:
                  url: \(Self.quoted(settings.replica.base))
                  sync-interval: \(interval)
              - path: \(Self.quoted(root.devicePath))
                replica:
                  url: \(Self.quoted(settings.replica.device))
                  sync-interval: \(interval)

            """
    }

    /// Litestream's tuning from accountd's settings (``ReplicationSettings/Tuning``): its
    /// metrics address (`addr`) and `snapshot` interval and retention; empty when none is set.
    var tuning: String {
        var text = ""
        if let address = settings.tuning.metricsAddress { text += "addr: \(Self.quoted(address))\n" }
        let interval = settings.tuning.snapshotIntervalHours
        let retention = settings.tuning.retentionHours
        if interval != nil || retention != nil {
            text += "snapshot:\n"
            if let interval { text += "  interval: \(Self.duration(interval * 3600))\n" }
            if let retention { text += "  retention: \(Self.duration(retention * 3600))\n" }
        }
        return text
    }

    /// Writes the file atomically (0600), creating its folder if needed.
    func write() throws {
        let folder = (settings.configPath as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temp = settings.configPath + ".tmp"
        guard FileManager.default.createFile(atPath: temp, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw AccountdError(.storage, "writing Litestream's configuration \(temp) failed: \(String(cString: strerror(errno)))", file: temp)
        }
        guard rename(temp, settings.configPath) == 0 else {
            throw AccountdError(
                .storage, "moving Litestream's configuration into place at \(settings.configPath) failed: \(String(cString: strerror(errno)))",
                file: settings.configPath)
        }
    }

    /// A Go duration: `1s`, `250ms`, in whole milliseconds and never below 1 ms (the settings
    /// allow nothing shorter: ``SettingsLoader/syncIntervalRange``).
    static func duration(_ seconds: Double) -> String {
        let milliseconds = max(1, (seconds * 1000).rounded())
        return milliseconds.truncatingRemainder(dividingBy: 1000) == 0 ? "\(Int(milliseconds / 1000))s" : "\(Int(milliseconds))ms"
    }

    /// A YAML double-quoted scalar: a JSON string literal, as JSON's string syntax is a
    /// subset of YAML's double-quoted style.
    static func quoted(_ text: String) -> String {
        var out = ""
        JSONValue.writeString(text, to: &out)
        return out
    }
}
