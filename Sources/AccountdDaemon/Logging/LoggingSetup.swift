import Foundation
import Logging
import Synchronization

/// Sets up swift-log for the daemon: the journal when systemd connected our stderr to
/// it (`JOURNAL_STREAM`), else plain lines on stderr. The level can change at run time
/// (a reload).
public enum LoggingSetup {
    /// The level every handler checks, so a reload can change it.
    static let level = Atomic<UInt8>(2)

    private static let levels: [Logger.Level] = [.trace, .debug, .info, .notice, .warning, .error, .critical]

    /// The current level.
    public static var currentLevel: Logger.Level {
        get { levels[Int(level.load(ordering: .relaxed))] }
        set { level.store(UInt8(levels.firstIndex(of: newValue) ?? 2), ordering: .relaxed) }
    }

    /// Whether stderr is the journal: `JOURNAL_STREAM` names stderr's device and inode.
    public static var stderrIsJournal: Bool {
        guard let stream = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        var info = stat()
        guard parts.count == 2, fstat(2, &info) == 0 else { return false }
        return UInt64(parts[0]) == UInt64(info.st_dev) && UInt64(parts[1]) == UInt64(info.st_ino)
    }

    public static func bootstrap(level: Logger.Level) {
        currentLevel = level
        let journal = stderrIsJournal
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                journal ? JournalLogHandler(label: label, level: .trace) : StreamLogHandler.standardError(label: label)
            handler.logLevel = .trace
            return LevelFilter(inner: handler)
        }
    }
}

/// Drops entries below ``LoggingSetup/currentLevel``.
struct LevelFilter: LogHandler {
    var inner: any LogHandler

    var logLevel: Logger.Level {
        get { LoggingSetup.currentLevel }
        set {}
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        inner.log(event: event)
    }
}
