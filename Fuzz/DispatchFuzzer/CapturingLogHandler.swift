import Logging
import Synchronization

/// Keeps the daemon's last warnings and errors in memory instead of printing them, so that
/// a failed check can show what the daemon logged (an `InternalError`'s details are only
/// in the log) without flooding the fuzzer's output on every input.
struct CapturingLogHandler: LogHandler {
    /// The most recent messages, oldest first.
    static let recent = Mutex<[String]>([])
    static let kept = 20

    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .warning

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let line = "\(event.level): \(event.message)"
        Self.recent.withLock { messages in
            messages.append(line)
            if messages.count > Self.kept { messages.removeFirst(messages.count - Self.kept) }
        }
    }

    /// The kept messages, one a line, for a failure report.
    static var report: String {
        recent.withLock { $0.isEmpty ? "(nothing logged)" : $0.joined(separator: "\n") }
    }
}
