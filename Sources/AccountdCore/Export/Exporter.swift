import AccountdProtocol
import Crypto
import Foundation
import GRDB
import GRDBSQLite

/// Exports an account file in one of the ``ExportFormat``s.
///
/// Every format reads from one snapshot-consistent read transaction (or, for
/// `sqlite`, from `VACUUM INTO`, which is itself consistent), so writes that land
/// during an export are either wholly in it or wholly out of it. The account file is
/// opened read-only. No format carries Litestream's `_litestream_*` tables
/// (``LitestreamTables``): they are replication state, not the account's data.
public struct Exporter: Sendable {
    /// The account file.
    public var path: String
    public var account: AccountName
    /// Where the `sqlite` format stages its copy (a 0700 folder on the same disk).
    public var temporaryDirectory: String
    /// How long to wait for another process's lock on the file (`accounts.lockTimeoutSeconds`).
    public var busy: Duration

    public init(path: String, account: AccountName, temporaryDirectory: String, busy: Duration = .seconds(10)) {
        self.busy = busy
        self.path = path
        self.account = account
        self.temporaryDirectory = temporaryDirectory
    }

    /// Runs the whole export at once, handing its data to `sink` as it is read (a sink that
    /// asks for pauses is simply called again).
    ///
    /// - Throws: ``AccountdError`` when the file cannot be read, or whatever `sink` throws
    ///   (a client that went away), which stops the export.
    public func export(_ format: ExportFormat, to sink: inout some ExportSink) throws -> ExportSummary {
        let run = try start(format)
        defer { run.close() }
        while true {
            if let summary = try run.produce(into: &sink) { return summary }
        }
    }

    /// Begins an export that is made a piece at a time (``ExportRun``): blocking, on a pool
    /// thread. The `sqlite` format stages its copy here.
    ///
    /// - Throws: ``AccountdError`` when the file is not this account's sound file, or cannot be read.
    public func start(_ format: ExportFormat) throws -> ExportRun {
        // Only a sound account file of this account is exported; a foreign, empty or
        // another account's file is refused like Switch refuses it.
        _ = try AccountInspector.inspect(path: path, account: account, deep: false, busy: busy)
        return try ExportRun(self, format: format)
    }

    /// A read-only connection to the account file that may keep a read transaction open
    /// from one pool job to the next (``ExportRun``).
    func open() throws -> DatabaseQueue {
        var configuration = Connections.configuration(foreignKeys: false, readonly: true, label: "export", busy: busy)
        configuration.allowsUnsafeTransactions = true
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// How the name of a copy staged for a `sqlite` export of `account` begins; a UUID and
    /// `.sqlite` follow.
    public static func stagingPrefix(_ account: AccountName) -> String { "export-\(account)-" }

    /// Whether `file`, a name in the temporary folder, is a copy staged by an export of `account`.
    public static func isStagedCopy(_ file: String, of account: AccountName) -> Bool {
        let prefix = stagingPrefix(account)
        guard file.hasPrefix(prefix) else { return false }
        let rest = file.dropFirst(prefix.count)
        // Another account whose name extends this one ("alice-b") has more before its UUID.
        return UUID(uuidString: String(rest.prefix(36))) != nil && [".sqlite", ".sqlite-journal"].contains(String(rest.dropFirst(36)))
    }
}
