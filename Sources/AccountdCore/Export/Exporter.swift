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
/// opened read-only.
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

    /// The tables to export, in schema order, and whether each is virtual.
    private func tables(_ db: Database) throws -> [(name: String, sql: String, isVirtual: Bool)] {
        let rows = try Row.fetchAll(
            db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid")
        let all = rows.map { row -> (String, String, Bool) in
            let sql: String = row["sql"] ?? ""
            return (row["name"], sql, sql.range(of: "CREATE VIRTUAL TABLE", options: [.caseInsensitive, .anchored]) != nil)
        }
        // Shadow tables of virtual tables are rebuilt by their module.
        let virtualNames = all.filter(\.2).map(\.0)
        return all.filter { table in !virtualNames.contains { table.0 != $0 && table.0.hasPrefix($0 + "_") } }
    }

    private func exportJSONLines(to sink: inout some ExportSink) throws -> ExportSummary {
        var summary = ExportSummary(format: .jsonl)
        let queue = try open()
        defer { try? queue.close() }
        try queue.read { db in
            var buffer: [UInt8] = []
            buffer.reserveCapacity(1 << 16)
            for table in try tables(db) {
                let statement = try db.makeStatement(sql: "SELECT * FROM \(table.name.quotedDatabaseIdentifier)")
                let writer = JSONRowWriter(table: table.name, columns: statement.columnNames)
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
                summary.tables[table.name] = count
                summary.rows += count
            }
        }
        return summary
    }

    private func exportSQL(to sink: inout some ExportSink) throws -> ExportSummary {
        var summary = ExportSummary(format: .sql)
        let queue = try open()
        defer { try? queue.close() }
        try queue.read { db in
            var text = "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n"
            func statement(_ sql: String) throws {
                text += sql
                text += ";\n"
                summary.statements += 1
                if text.utf8.count >= 1 << 16 {
                    try sink.sql(text)
                    text = ""
                }
            }
            for table in try tables(db) {
                try statement(table.sql)
                let columns = try Row.fetchAll(db, sql: "SELECT name, hidden FROM pragma_table_xinfo(?)", arguments: [table.name])
                    .filter { ($0["hidden"] as Int) == 0 }.map { $0["name"] as String }
                let list = columns.map(\.quotedDatabaseIdentifier).joined(separator: ",")
                let insert = "INSERT INTO \(table.name.quotedDatabaseIdentifier)(\(list)) VALUES("
                let select = try db.makeStatement(sql: "SELECT \(list) FROM \(table.name.quotedDatabaseIdentifier)")
                let handle = select.sqliteStatement
                while sqlite3_step(handle) == SQLITE_ROW {
                    var line = insert
                    for index in 0..<Int32(columns.count) {
                        if index > 0 { line += "," }
                        SQLLiteral.append(handle, column: index, to: &line)
                    }
                    line += ")"
                    try statement(line)
                }
                sqlite3_reset(handle)
            }
            if try db.tableExists("sqlite_sequence") {
                try statement("DELETE FROM sqlite_sequence")
                for row in try Row.fetchAll(db, sql: "SELECT name, seq FROM sqlite_sequence") {
                    try statement("INSERT INTO sqlite_sequence(name,seq) VALUES(\((row["name"] as String).quotedSQLString),\(row["seq"] as Int64))")
                }
            }
            for row in try Row.fetchAll(
                db,
                sql: "SELECT sql FROM sqlite_master WHERE type IN ('index', 'view', 'trigger') AND sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY CASE type WHEN 'index' THEN 0 WHEN 'view' THEN 1 ELSE 2 END, rowid")
            {
                try statement(row["sql"])
            }
            let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            let applicationID = try Int.fetchOne(db, sql: "PRAGMA application_id") ?? 0
            try statement("PRAGMA user_version=\(version)")
            try statement("PRAGMA application_id=\(applicationID)")
            try statement("COMMIT")
            try sink.sql(text)
        }
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

/// SQL literals for the `sql` export, exact for every SQLite type.
enum SQLLiteral {
    static func append(_ statement: OpaquePointer, column: Int32, to out: inout String) {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            out += String(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            let value = sqlite3_column_double(statement, column)
            // Swift's shortest round-trip form reads back as the same REAL; "1.0" stays REAL.
            out += value.isFinite ? String(value) : (value > 0 ? "9e999" : "-9e999")
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(statement, column))
            let bytes = sqlite3_column_text(statement, column).map { UnsafeBufferPointer(start: $0, count: count) }
                ?? UnsafeBufferPointer(start: nil, count: 0)
            // The sqlite3 shell reads a dump line by line: a NUL, a carriage return or invalid
            // UTF-8 would not survive a plain literal, so such text goes out as exact bytes.
            if let text = String(validating: bytes, as: UTF8.self), !bytes.contains(0), !bytes.contains(0x0D) {
                out += text.quotedSQLString
            } else {
                out += "CAST(X'"
                appendHex(UnsafeRawBufferPointer(bytes), to: &out)
                out += "' AS TEXT)"
            }
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, column))
            out += "X'"
            if let blob = sqlite3_column_blob(statement, column), count > 0 {
                appendHex(UnsafeRawBufferPointer(start: blob, count: count), to: &out)
            }
            out += "'"
        default:
            out += "NULL"
        }
    }

    private static func appendHex(_ bytes: UnsafeRawBufferPointer, to out: inout String) {
        out.reserveCapacity(out.utf8.count + bytes.count * 2 + 1)
        for byte in bytes {
            out.unicodeScalars.append(hexDigit(byte >> 4))
            out.unicodeScalars.append(hexDigit(byte & 0xF))
        }
    }

    private static func hexDigit(_ value: UInt8) -> Unicode.Scalar {
        Unicode.Scalar(value < 10 ? 0x30 + value : 0x61 + value - 10)
    }
}

extension String {
    /// The string as a SQL string literal: `'it''s'`.
    var quotedSQLString: String {
        "'" + replacingOccurrences(of: "'", with: "''") + "'"
    }
}
