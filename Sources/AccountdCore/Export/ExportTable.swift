import GRDB

/// A table of an account file as the exports see it.
///
/// A virtual table has no storage of its own: what it shows lives in its shadow
/// tables (`notes_fts_data`, `places_node`, ...), which are ordinary tables in the
/// file, or outside the file altogether. So the `jsonl` and `sql` exports read rows
/// from the ordinary tables, shadow tables included, and treat a virtual table as
/// schema only.
struct ExportTable {
    /// The table's name.
    var name: String
    /// Its `CREATE` statement as SQLite keeps it in `sqlite_schema`.
    var sql: String
    /// A virtual table (`rootpage` 0): schema only, its data is in its shadow tables.
    var isVirtual: Bool

    /// The tables of the main schema in schema order, leaving out SQLite's own
    /// `sqlite_%` tables (the `sql` export writes `sqlite_sequence` by itself) and
    /// Litestream's `_litestream_%` tables (``LitestreamTables``).
    /// SQLite's own tables that hold what the account's data needs besides its rows: the
    /// AUTOINCREMENT counters and the statistics `ANALYZE` gathered, in `db` as it is.
    static func sqliteKept(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db,
            sql: """
                SELECT name FROM sqlite_schema
                WHERE type = 'table' AND name IN ('sqlite_sequence', 'sqlite_stat1', 'sqlite_stat4') ORDER BY rowid
                """)
    }

    static func all(_ db: Database) throws -> [ExportTable] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT name, sql, rootpage FROM sqlite_schema
                WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND \(LitestreamTables.excluded())
                ORDER BY rowid
                """
        ).map { row in
            ExportTable(name: row["name"], sql: row["sql"] ?? "", isVirtual: (row["rootpage"] as Int? ?? 0) == 0)
        }
    }
}
