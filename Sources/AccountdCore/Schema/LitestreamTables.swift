import GRDB

/// The tables Litestream 0.5 creates inside every database it replicates
/// (`_litestream_seq`, `_litestream_lock`): Litestream's, not the account's.
///
/// Litestream writes to them to move the WAL forward and to hold its lock, so they
/// appear in an account file as soon as the file is replicated. Schema checks, Verify
/// and the exports leave them out, so that replication is never mistaken for drift and
/// never travels with an account's data; a bundle may not create tables with the prefix.
public enum LitestreamTables {
    /// The names' prefix.
    public static let prefix = "_litestream_"

    /// A SQL condition true for objects that are not Litestream's, on `column` of `sqlite_schema`.
    static func excluded(_ column: String = "name") -> String {
        "\(column) NOT LIKE '\\_litestream\\_%' ESCAPE '\\'"
    }

    /// Whether `name` is one of Litestream's tables.
    public static func contains(_ name: String) -> Bool {
        name.lowercased().hasPrefix(prefix)
    }

    /// The `CREATE` statements of Litestream's tables in `db`, in schema order.
    static func definitions(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db, sql: "SELECT sql FROM sqlite_schema WHERE type = 'table' AND NOT (\(excluded())) AND sql IS NOT NULL ORDER BY rowid")
    }

    /// Drops Litestream's tables from `db`: a copy that leaves accountd's hands (an export,
    /// a new account built from a template) carries no replication state.
    static func drop(_ db: Database) throws {
        for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_schema WHERE type = 'table' AND NOT (\(excluded()))") {
            try db.execute(sql: "DROP TABLE \(name.quotedDatabaseIdentifier)")
        }
    }
}
