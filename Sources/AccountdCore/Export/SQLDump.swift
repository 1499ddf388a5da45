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
enum SQLDump {
    /// Writes the whole dump of `db` to `sink`, in pieces of whole statements.
    ///
    /// - Returns: the number of statements written.
    /// - Throws: a `DatabaseError` when reading fails, or whatever `sink` throws.
    static func write(_ db: Database, to sink: inout some ExportSink) throws -> Int {
        // Rows are written as they are: a row that an earlier CHECK no longer accepts, or
        // that was written with CHECK constraints ignored, comes back too.
        var out = SQLStatements(text: "PRAGMA foreign_keys=OFF;\nPRAGMA ignore_check_constraints=ON;\nBEGIN TRANSACTION;\n")
        guard let connection = db.sqliteConnection else { throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the export's connection is closed") }
        var literals = try SQLLiteral(connection)
        defer { literals.finalize() }
        var writableSchema = false
        for table in try ExportTable.all(db) {
            if table.isVirtual {
                if !writableSchema {
                    try out.add("PRAGMA writable_schema=ON", to: &sink)
                    writableSchema = true
                }
                let name = table.name.quotedSQLString
                try out.add(
                    "INSERT INTO sqlite_schema(type,name,tbl_name,rootpage,sql) VALUES('table',\(name),\(name),0,\(table.sql.quotedSQLString))",
                    to: &sink)
            } else {
                try out.add(createStatement(table.sql), to: &sink)
                try writeRows(of: table.name, db, literals: &literals, into: &out, to: &sink)
            }
        }
        if writableSchema { try out.add("PRAGMA writable_schema=OFF", to: &sink) }
        if try db.tableExists("sqlite_sequence") {
            try out.add("DELETE FROM sqlite_sequence", to: &sink)
            for row in try Row.fetchAll(db, sql: "SELECT name, seq FROM sqlite_sequence") {
                try out.add(
                    "INSERT INTO sqlite_sequence(name,seq) VALUES(\((row["name"] as String).quotedSQLString),\(row["seq"] as Int64))",
                    to: &sink)
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
            try out.add(row["sql"], to: &sink)
        }
        // The statistics ANALYZE gathered, as `sqlite3 .dump` writes them: ANALYZE of the
        // schema table makes the tables, empty, and the rows follow.
        let statistics = try ExportTable.sqliteKept(db).filter { $0.hasPrefix("sqlite_stat") }
        if !statistics.isEmpty {
            try out.add("ANALYZE sqlite_schema", to: &sink)
            for table in statistics {
                try out.add("DELETE FROM \(table)", to: &sink)
                try writeRows(of: table, db, literals: &literals, into: &out, to: &sink)
            }
        }
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let applicationID = try Int.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        try out.add("PRAGMA user_version=\(version)", to: &sink)
        try out.add("PRAGMA application_id=\(applicationID)", to: &sink)
        try out.add("COMMIT", to: &sink)
        try out.add("PRAGMA ignore_check_constraints=OFF", to: &sink)
        try out.flush(to: &sink)
        return out.count
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

    /// One `INSERT` per row of `table`, read as it is stepped.
    private static func writeRows(
        of table: String, _ db: Database, literals: inout SQLLiteral, into out: inout SQLStatements, to sink: inout some ExportSink
    ) throws {
        let info = try Row.fetchAll(db, sql: "SELECT name, hidden FROM pragma_table_xinfo(?)", arguments: [table])
        // Generated columns (hidden 2 and 3) are computed again by the rebuilt table.
        var columns = info.filter { ($0["hidden"] as Int) == 0 }.map { $0["name"] as String }
        if let rowID = try rowIDName(of: table, columns: info.map { $0["name"] as String }, db) {
            columns.insert(rowID, at: 0)
        }
        let list = columns.map(\.quotedIdentifier).joined(separator: ",")
        let insert = "INSERT INTO \(table.quotedIdentifier)(\(list)) VALUES("
        let select = try db.makeStatement(sql: "SELECT \(list) FROM \(table.quotedIdentifier)")
        let handle = select.sqliteStatement
        defer { sqlite3_reset(handle) }
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            out.append(insert)
            for index in 0..<Int32(columns.count) {
                if index > 0 { out.append(",") }
                try literals.append(handle, column: index, to: &out, sink: &sink)
            }
            try out.endStatement(")", to: &sink)
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
