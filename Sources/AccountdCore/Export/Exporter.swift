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

    public init(path: String, account: AccountName, temporaryDirectory: String) {
        self.path = path
        self.account = account
        self.temporaryDirectory = temporaryDirectory
    }

    /// Runs the export, handing its data to `sink` as it is read.
    ///
    /// - Throws: ``AccountdError`` when the file cannot be read, or whatever `sink` throws
    ///   (a client that went away), which stops the export.
    public func export(_ format: ExportFormat, to sink: inout some ExportSink) throws -> ExportSummary {
        // Only a sound account file of this account is exported; a foreign, empty or
        // another account's file is refused like Switch refuses it.
        _ = try AccountInspector.inspect(path: path, account: account, deep: false)
        do {
            switch format {
            case .jsonl: return try exportJSONLines(to: &sink)
            case .sql: return try exportSQL(to: &sink)
            case .sqlite: return try exportSQLite(to: &sink)
            }
        } catch let error as DatabaseError {
            throw AccountdError(
                .storage, "exporting account \(account) failed: \(ErrorText.of(error))", account: account.rawValue,
                file: path)
        }
    }

    private func open() throws -> DatabaseQueue {
        try DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: false, readonly: true, label: "export"))
    }

    private func exportJSONLines(to sink: inout some ExportSink) throws -> ExportSummary {
        var summary = ExportSummary(format: .jsonl)
        let queue = try open()
        defer { try? queue.close() }
        try queue.read { db in
            var buffer: [UInt8] = []
            buffer.reserveCapacity(1 << 16)
            // Virtual tables are skipped and their shadow tables exported like any other:
            // the shadow tables hold what the virtual table shows, so every stored row
            // comes out exactly once (docs/PROTOCOL.md, "Export").
            // SQLite's counters and statistics come last, as tables of their own name.
            let names = try ExportTable.all(db).filter { !$0.isVirtual }.map(\.name) + ExportTable.sqliteKept(db)
            for name in names {
                let statement = try db.makeStatement(sql: "SELECT * FROM \(name.quotedIdentifier)")
                let writer = JSONRowWriter(table: name, columns: statement.columnNames)
                let handle = statement.sqliteStatement
                var count = 0
                while true {
                    let code = sqlite3_step(handle)
                    if code == SQLITE_DONE { break }
                    guard code == SQLITE_ROW else { throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection))) }
                    buffer.removeAll(keepingCapacity: true)
                    writer.write(handle, into: &buffer)
                    try buffer.withUnsafeBufferPointer { try sink.row($0) }
                    count += 1
                }
                sqlite3_reset(handle)
                summary.tables[name] = count
                summary.rows += count
            }
        }
        return summary
    }

    private func exportSQL(to sink: inout some ExportSink) throws -> ExportSummary {
        var summary = ExportSummary(format: .sql)
        let queue = try open()
        defer { try? queue.close() }
        try queue.read { db in summary.statements = try SQLDump.write(db, to: &sink) }
        return summary
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

    private func exportSQLite(to sink: inout some ExportSink) throws -> ExportSummary {
        try FileSystem.ensureDirectory(temporaryDirectory)
        let temp = temporaryDirectory + "/" + Self.stagingPrefix(account) + UUID().uuidString + ".sqlite"
        try FileSystem.createExclusive(temp)
        defer { try? FileSystem.removeIfPresent(temp) }
        let queue = try open()
        try queue.inDatabase { db in try db.execute(sql: "VACUUM INTO ?", arguments: [temp]) }
        try queue.close()
        // The copy is the account's data, not Litestream's replication state.
        let copy = try DatabaseQueue(path: temp, configuration: Connections.configuration(foreignKeys: false, label: "export-copy"))
        try copy.inDatabase { db in try LitestreamTables.drop(db) }
        try copy.close()
        guard let handle = FileHandle(forReadingAtPath: temp) else {
            throw AccountdError.storage("reading the export copy", path: temp, errno: errno)
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        var summary = ExportSummary(format: .sqlite)
        while let chunk = try handle.read(upToCount: 48 * 1024), !chunk.isEmpty {
            hasher.update(data: chunk)
            summary.sizeBytes += Int64(chunk.count)
            try chunk.withUnsafeBytes { try sink.bytes($0) }
        }
        summary.sha256 = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        return summary
    }
}
