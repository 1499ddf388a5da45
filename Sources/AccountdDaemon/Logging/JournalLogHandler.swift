import CSystemd
import Foundation
import Logging

/// Logs to the systemd journal with structured fields.
///
/// Besides `MESSAGE` and `PRIORITY`, the metadata keys `account`, `operation`,
/// `migration_from`, `migration_to`, `peer_uid` and `error` become the journal fields
/// `ACCOUNT=`, `OPERATION=`, `MIGRATION_FROM=`, `MIGRATION_TO=`, `PEER_UID=` and `ERROR=`,
/// so an operator can run `journalctl -u accountd ACCOUNT=alice`.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String

    public init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata.merging(event.metadata ?? [:]) { $1 }
        if let error = event.error, merged["error"] == nil { merged["error"] = "\(error)" }
        Self.send(Self.fields(level: event.level, message: "\(event.message)", metadata: merged, identifier: "accountd"))
    }

    /// The journal fields of one entry, as `NAME=value` strings.
    public static func fields(level: Logger.Level, message: String, metadata: Logger.Metadata, identifier: String) -> [String] {
        var fields = ["MESSAGE=\(message)", "PRIORITY=\(priority(level))", "SYSLOG_IDENTIFIER=\(identifier)"]
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            let name = key.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
            // Journal field names: A-Z, 0-9 and _, not starting with _ (those are trusted fields).
            guard let first = name.first, first != "_", !first.isNumber else { continue }
            fields.append("\(String(name))=\(value)")
        }
        return fields
    }

    /// syslog priorities, as the journal uses them.
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    private static func send(_ fields: [String]) {
        let buffers = fields.map { Array($0.utf8) }
        var pointers: [UnsafeMutableRawPointer?] = []
        var vectors: [iovec] = []
        for bytes in buffers {
            let copy = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
            bytes.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            pointers.append(copy)
            vectors.append(iovec(iov_base: copy, iov_len: bytes.count))
        }
        _ = vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) }
        for pointer in pointers { pointer?.deallocate() }
    }
}
