import AccountdProtocol
import Crypto
import Foundation
import GRDB
import GRDBSQLite

/// An export made a piece at a time: each ``produce(into:)`` is one blocking job (on a pool
/// thread) that goes on from where the last stopped, until its sink wants a pause, so that
/// no thread waits while the client reads. Between jobs the run keeps what it reads from:
/// the `jsonl` and `sql` formats their read transaction (one WAL snapshot) and the statement
/// being stepped; the `sqlite` format its staged copy and how far it was read.
///
/// A run is used by one job at a time (the daemon awaits each before it starts the next),
/// which is what makes the unchecked `Sendable` sound. ``close()`` ends it however it ended:
/// the read transaction is released and the staged copy removed.
public final class ExportRun: @unchecked Sendable {
    public let format: ExportFormat
    private let exporter: Exporter
    private var state: State
    private var summary: ExportSummary

    /// The `jsonl` format's place: the tables, and the one being read.
    private struct Lines {
        var names: [String]?
        var index = 0
        var current: (statement: Statement, writer: JSONRowWriter, count: Int)?
        var buffer: [UInt8] = []
    }

    /// The `sqlite` format's staged copy, read a chunk at a time.
    private struct Copy {
        var path: String
        var handle: FileHandle
        var hasher = SHA256()
    }

    private enum State {
        case lines(DatabaseQueue, Lines)
        case dump(DatabaseQueue, SQLDump?)
        case copy(Copy)
        case closed
    }

    init(_ exporter: Exporter, format: ExportFormat) throws {
        self.exporter = exporter
        self.format = format
        summary = ExportSummary(format: format)
        do {
            switch format {
            case .jsonl, .sql:
                let queue = try exporter.open()
                // One read transaction for the whole export, from the first job to the last.
                try queue.inDatabase { db in try db.beginTransaction(.deferred) }
                state = format == .jsonl ? .lines(queue, Lines()) : .dump(queue, nil)
            case .sqlite:
                state = .copy(try Self.stage(exporter))
            }
        } catch let error as DatabaseError {
            throw exporter.failure(error)
        }
    }

    /// Makes the next piece into `sink`, stopping once it wants a pause.
    ///
    /// - Returns: the summary once the export is complete (the run is then closed); nil
    ///   when there is more.
    /// - Throws: ``AccountdError`` when reading fails, or whatever `sink` throws; the run
    ///   should then be closed.
    public func produce(into sink: inout some ExportSink) throws -> ExportSummary? {
        do {
            let done: Bool
            switch state {
            case .lines(let queue, var lines):
                done = try queue.inDatabase { db in try Self.lines(&lines, db, summary: &summary, to: &sink) }
                state = .lines(queue, lines)
            case .dump(let queue, let dump):
                done = try queue.inDatabase { db in
                    let dump = try dump ?? SQLDump(db)
                    state = .dump(queue, dump)
                    let done = try dump.write(db, to: &sink)
                    summary.statements = dump.count
                    return done
                }
            case .copy(var copy):
                done = try Self.read(&copy, summary: &summary, to: &sink)
                state = .copy(copy)
            case .closed:
                throw AccountdError(.storage, "the export of account \(exporter.account) was already ended", account: exporter.account.rawValue)
            }
            guard done else { return nil }
            close()
            return summary
        } catch let error as DatabaseError {
            throw exporter.failure(error)
        }
    }

    /// Ends the run: the read transaction is released, the connection closed, the staged copy removed. Blocking.
    public func close() {
        switch state {
        case .lines(let queue, _), .dump(let queue, _):
            if case .dump(_, let dump?) = state { dump.close() }
            state = .closed
            // The statements go with the state; then the transaction ends and the file is closed.
            try? queue.inDatabase { db in if db.isInsideTransaction { try db.rollback() } }
            try? queue.close()
        case .copy(let copy):
            state = .closed
            try? copy.handle.close()
            try? FileSystem.removeIfPresent(copy.path)
        case .closed:
            break
        }
    }

    deinit { close() }

    // MARK: jsonl

    /// Writes rows on from where the last job stopped; true at the end.
    private static func lines(_ lines: inout Lines, _ db: Database, summary: inout ExportSummary, to sink: inout some ExportSink) throws -> Bool {
        // Virtual tables are skipped and their shadow tables exported like any other:
        // the shadow tables hold what the virtual table shows, so every stored row
        // comes out exactly once (docs/PROTOCOL.md, "Export").
        // SQLite's counters and statistics come last, as tables of their own name.
        let names = try lines.names ?? (ExportTable.all(db).filter { !$0.isVirtual }.map(\.name) + ExportTable.sqliteKept(db))
        lines.names = names
        if lines.buffer.capacity < 1 << 16 { lines.buffer.reserveCapacity(1 << 16) }
        while lines.index < names.count {
            let name = names[lines.index]
            if lines.current == nil {
                let statement = try db.makeStatement(sql: "SELECT * FROM \(name.quotedIdentifier)")
                lines.current = (statement, JSONRowWriter(table: name, columns: statement.columnNames), 0)
            }
            guard var current = lines.current else { break }
            let handle = current.statement.sqliteStatement
            while true {
                let code = sqlite3_step(handle)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else {
                    sqlite3_reset(handle)
                    throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
                }
                lines.buffer.removeAll(keepingCapacity: true)
                current.writer.write(handle, into: &lines.buffer)
                try lines.buffer.withUnsafeBufferPointer { try sink.row($0) }
                current.count += 1
                if sink.wantsPause {
                    lines.current = current
                    return false
                }
            }
            sqlite3_reset(handle)
            summary.tables[name] = current.count
            summary.rows += current.count
            lines.current = nil
            lines.index += 1
        }
        return true
    }

    // MARK: sqlite

    /// Stages a consistent copy of the account file (`VACUUM INTO`) without Litestream's tables.
    private static func stage(_ exporter: Exporter) throws -> Copy {
        try FileSystem.ensureDirectory(exporter.temporaryDirectory)
        let temp = exporter.temporaryDirectory + "/" + Exporter.stagingPrefix(exporter.account) + UUID().uuidString + ".sqlite"
        try FileSystem.createExclusive(temp)
        do {
            let queue = try exporter.open()
            try queue.inDatabase { db in try db.execute(sql: "VACUUM INTO ?", arguments: [temp]) }
            try queue.close()
            // The copy is the account's data, not Litestream's replication state.
            let copy = try DatabaseQueue(path: temp, configuration: Connections.configuration(foreignKeys: false, label: "export-copy"))
            try copy.inDatabase { db in try LitestreamTables.drop(db) }
            try copy.close()
            guard let handle = FileHandle(forReadingAtPath: temp) else {
                throw AccountdError.storage("reading the export copy", path: temp, errno: errno)
            }
            return Copy(path: temp, handle: handle)
        } catch {
            try? FileSystem.removeIfPresent(temp)
            throw error
        }
    }

    /// Reads the copy on from where the last job stopped; true at its end.
    private static func read(_ copy: inout Copy, summary: inout ExportSummary, to sink: inout some ExportSink) throws -> Bool {
        while let chunk = try copy.handle.read(upToCount: 48 * 1024), !chunk.isEmpty {
            copy.hasher.update(data: chunk)
            summary.sizeBytes += Int64(chunk.count)
            try chunk.withUnsafeBytes { try sink.bytes($0) }
            if sink.wantsPause { return false }
        }
        summary.sha256 = copy.hasher.finalize().map { String(format: "%02x", $0) }.joined()
        return true
    }
}

extension Exporter {
    /// A failure of SQLite while exporting, as the daemon reports it.
    func failure(_ error: DatabaseError) -> AccountdError {
        AccountdError(.storage, "exporting account \(account) failed: \(ErrorText.of(error))", account: account.rawValue, file: path)
    }
}
