import GRDB
import GRDBSQLite

/// Writes the `sql` export: statements that the `sqlite3` shell replays
/// (`sqlite3 new.db < dump.sql`) to rebuild an account file with the same schema,
/// rows, `sqlite_sequence`, `user_version` and `application_id`.
///
/// Virtual tables are written the way `sqlite3 .dump` writes them. Creating one with
/// `CREATE VIRTUAL TABLE` would have its module create fresh, empty shadow tables, and
/// inserting its rows through it cannot rebuild an index whose text was never kept
/// (a contentless FTS5 table reads back NULLs). So the virtual table's row goes
/// straight into `sqlite_schema` under `PRAGMA writable_schema=ON`, and its shadow
/// tables are created and filled like any other table: the rebuilt file holds the
/// same index bytes, and every `MATCH` or R*Tree query answers as on the account.
///
/// Unlike `sqlite3 .dump`, a table's rowid is kept even when no column aliases it,
/// because an external-content FTS table points at its content table's rowids.
///
/// The dump is resumable: ``init(_:)`` reads the schema and lays out the dump's parts (the
/// statements, and the tables whose rows go between them), and each ``write(_:to:)`` goes on
/// from where the last stopped, until the sink wants a pause, so that the export can be made
/// one pool job at a time in one read transaction, with no thread waiting for the client.
final class SQLDump {
    /// One part of the dump, in order.
    private enum Part {
        /// A whole statement.
        case statement(String)
        /// One `INSERT` per row of the table.
        case rows(String)
    }

    /// The table whose rows are being written: its `SELECT`, stepped across calls, and
    /// where in its current row the last call stopped (a large value is cut into pieces).
    private struct Rows {
        var select: Statement
        var insert: String
        var columns: Int32
        /// Whether a row's `INSERT` was begun and not ended.
        var inRow = false
        var column: Int32 = 0
        /// Where in the column's value the last call stopped; 0 at its start.
        var offset = 0
    }

    private var parts: [Part] = []
    private var next = 0
    private var rows: Rows?
    // Rows are written as they are: a row that an earlier CHECK no longer accepts, or
    // that was written with CHECK constraints ignored, comes back too.
    private var out = SQLStatements(text: "PRAGMA foreign_keys=OFF;\nPRAGMA ignore_check_constraints=ON;\nBEGIN TRANSACTION;\n")
    private var literals: SQLLiteral
    private var finished = false
    private var closed = false

    /// Statements written so far.
    var count: Int { out.count }

    /// Lays out the dump of `db`, read in the transaction the whole dump is read in.
    ///
    /// - Throws: a `DatabaseError` when reading fails.
    init(_ db: Database) throws {
        guard let connection = db.sqliteConnection else { throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the export's connection is closed") }
        literals = try SQLLiteral(connection)
        do {
            parts = try Self.layOut(db)
        } catch {
            literals.finalize()
            throw error
        }
    }

    /// The dump's parts, in the order they are written.
    private static func layOut(_ db: Database) throws -> [Part] {
        var parts: [Part] = []
        var writableSchema = false
        for table in try ExportTable.all(db) {
            if table.isVirtual {
                if !writableSchema {
                    parts.append(.statement("PRAGMA writable_schema=ON"))
                    writableSchema = true
                }
                let name = table.name.quotedSQLString
                parts.append(
                    .statement("INSERT INTO sqlite_schema(type,name,tbl_name,rootpage,sql) VALUES('table',\(name),\(name),0,\(table.sql.quotedSQLString))"))
            } else {
                parts.append(.statement(createStatement(table.sql)))
                parts.append(.rows(table.name))
            }
        }
        if writableSchema { parts.append(.statement("PRAGMA writable_schema=OFF")) }
        if try db.tableExists("sqlite_sequence") {
            parts.append(.statement("DELETE FROM sqlite_sequence"))
            for row in try Row.fetchAll(db, sql: "SELECT name, seq FROM sqlite_sequence") {
                parts.append(.statement("INSERT INTO sqlite_sequence(name,seq) VALUES(\((row["name"] as String).quotedSQLString),\(row["seq"] as Int64))"))
            }
        }
        // Indexes, views and triggers after the rows: a trigger must not fire on the rows
        // being restored, and an index is built once rather than row by row.
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT sql FROM sqlite_schema
                WHERE type IN ('index', 'view', 'trigger') AND sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                  AND \(LitestreamTables.excluded("tbl_name"))
                ORDER BY CASE type WHEN 'index' THEN 0 WHEN 'view' THEN 1 ELSE 2 END, rowid
                """)
        {
            parts.append(.statement(row["sql"]))
        }
        // The statistics ANALYZE gathered, as `sqlite3 .dump` writes them: ANALYZE of the
        // schema table makes the tables, empty, and the rows follow.
        let statistics = try ExportTable.sqliteKept(db).filter { $0.hasPrefix("sqlite_stat") }
        if !statistics.isEmpty {
            parts.append(.statement("ANALYZE sqlite_schema"))
            for table in statistics {
                parts.append(.statement("DELETE FROM \(table)"))
                parts.append(.rows(table))
            }
        }
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let applicationID = try Int.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        parts.append(.statement("PRAGMA user_version=\(version)"))
        parts.append(.statement("PRAGMA application_id=\(applicationID)"))
        parts.append(.statement("COMMIT"))
        parts.append(.statement("PRAGMA ignore_check_constraints=OFF"))
        return parts
    }

    /// Writes on from where the last call stopped, until `sink` wants a pause or the dump
    /// ends; in the read transaction of ``init(_:)``.
    ///
    /// - Returns: true once the whole dump is written.
    /// - Throws: a `DatabaseError` when reading fails, or whatever `sink` throws.
    func write(_ db: Database, to sink: inout some ExportSink) throws -> Bool {
        while !finished {
            if var current = rows {
                let done = try writeRows(&current, db, to: &sink)
                rows = done ? nil : current
                if done { next += 1 }
            } else if next < parts.count {
                switch parts[next] {
                case .statement(let sql):
                    try out.add(sql, to: &sink)
                    next += 1
                case .rows(let table):
                    rows = try Self.rows(of: table, db)
                }
            } else {
                try out.flush(to: &sink)
                finished = true
                close()
            }
            if sink.wantsPause { return finished }
        }
        return true
    }

    /// Releases what the dump holds; once, when it ends or is given up.
    func close() {
        rows = nil
        guard !closed else { return }
        closed = true
        finished = true
        parts = []
        literals.finalize()
    }

    /// A table's `CREATE` statement for the dump. A shadow table's statement (SQLite keeps
    /// it with a quoted name, `CREATE TABLE 'notes_fts_data'(...)`) gets `IF NOT EXISTS`,
    /// as `sqlite3 .dump` writes it, so a module that did create its shadow tables does
    /// not stop the rebuild; SQLite stores the statement without that clause.
    private static func createStatement(_ sql: String) -> String {
        let prefix = "CREATE TABLE "
        guard sql.hasPrefix(prefix), let quote = sql.dropFirst(prefix.count).first, quote == "'" || quote == "\"" else { return sql }
        return "CREATE TABLE IF NOT EXISTS " + sql.dropFirst(prefix.count)
    }

    /// The `SELECT` and `INSERT` of `table`'s rows.
    private static func rows(of table: String, _ db: Database) throws -> Rows {
        let info = try Row.fetchAll(db, sql: "SELECT name, hidden FROM pragma_table_xinfo(?)", arguments: [table])
        // Generated columns (hidden 2 and 3) are computed again by the rebuilt table.
        var columns = info.filter { ($0["hidden"] as Int) == 0 }.map { $0["name"] as String }
        if let rowID = try rowIDName(of: table, columns: info.map { $0["name"] as String }, db) {
            columns.insert(rowID, at: 0)
        }
        let list = columns.map(\.quotedIdentifier).joined(separator: ",")
        let select = try db.makeStatement(sql: "SELECT \(list) FROM \(table.quotedIdentifier)")
        return Rows(select: select, insert: "INSERT INTO \(table.quotedIdentifier)(\(list)) VALUES(", columns: Int32(columns.count))
    }

    /// One `INSERT` per row, read as it is stepped, until the rows end (true) or `sink` wants
    /// a pause (false), between rows or inside a large value.
    private func writeRows(_ rows: inout Rows, _ db: Database, to sink: inout some ExportSink) throws -> Bool {
        let handle = rows.select.sqliteStatement
        while true {
            if !rows.inRow {
                let code = sqlite3_step(handle)
                if code == SQLITE_DONE {
                    sqlite3_reset(handle)
                    return true
                }
                guard code == SQLITE_ROW else {
                    sqlite3_reset(handle)
                    throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
                }
                out.append(rows.insert)
                (rows.inRow, rows.column, rows.offset) = (true, 0, 0)
            }
            while rows.column < rows.columns {
                if rows.column > 0 && rows.offset == 0 { out.append(",") }
                if let paused = try literals.append(handle, column: rows.column, from: rows.offset, to: &out, sink: &sink) {
                    rows.offset = paused
                    return false
                }
                rows.offset = 0
                rows.column += 1
            }
            try out.endStatement(")", to: &sink)
            rows.inRow = false
            if sink.wantsPause { return false }
        }
    }

    /// The name to write `table`'s rowid under, or nil when it needs none: an INTEGER
    /// PRIMARY KEY column already holds it, the table is WITHOUT ROWID, or every name
    /// of the rowid (`rowid`, `_rowid_`, `oid`) is taken by a column.
    private static func rowIDName(of table: String, columns: [String], _ db: Database) throws -> String? {
        // An INTEGER PRIMARY KEY aliases the rowid. (GRDB's `primaryKey(_:)` is not used:
        // it splices the name into a PRAGMA without doubling its quotes.)
        let keys = try String.fetchAll(db, sql: "SELECT type FROM pragma_table_info(?) WHERE pk > 0", arguments: [table])
        if keys.count == 1, keys[0].uppercased() == "INTEGER" { return nil }
        let taken = Set(columns.map { $0.lowercased() })
        guard let name = ["rowid", "_rowid_", "oid"].first(where: { !taken.contains($0) }) else { return nil }
        // A WITHOUT ROWID table has no rowid to select.
        guard (try? db.makeStatement(sql: "SELECT \(name) FROM \(table.quotedIdentifier) LIMIT 0")) != nil else { return nil }
        return name
    }
}
