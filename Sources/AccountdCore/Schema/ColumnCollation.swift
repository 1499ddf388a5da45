import GRDB
import GRDBSQLite

/// A column's collating sequence, as SQLite itself keeps it (`sqlite3_table_column_metadata`).
///
/// No pragma reports it, and it decides what `=`, `ORDER BY`, `UNIQUE` and indexes do
/// with the column's text: under `NOCASE`, 'Bob' and 'bob' are one name.
enum ColumnCollation {
    /// `column`'s collation in `table` of `db`'s main schema, lowercased; `binary` when SQLite
    /// cannot say (a virtual table's column).
    static func of(_ db: Database, table: String, column: String) -> String {
        guard let connection = db.sqliteConnection else { return "binary" }
        var collation: UnsafePointer<CChar>?
        let code = sqlite3_table_column_metadata(connection, "main", table, column, nil, &collation, nil, nil, nil)
        guard code == SQLITE_OK, let collation else { return "binary" }
        return String(cString: collation).lowercased()
    }
}
