import GRDB

/// The two tables Litestream 0.5 creates inside every database it replicates
/// (`_litestream_seq`, `_litestream_lock`): Litestream's, not the account's.
///
/// Litestream writes to them to move the WAL forward and to hold its lock, so they
/// appear in an account file as soon as the file is replicated. Schema checks, Verify
/// and the exports leave them out, so that replication is never mistaken for drift and
/// never travels with an account's data. Only these two names are left out: a bundle's
/// own table whose name merely begins with `_litestream_` is the account's like any other.
public enum LitestreamTables {
    /// Litestream's table names, lowercased.
    public static let names: Set<String> = ["_litestream_seq", "_litestream_lock"]

    /// A SQL condition true for objects that are not Litestream's, on `column` of `sqlite_schema`.
    static func excluded(_ column: String = "name") -> String {
        "lower(\(column)) NOT IN ('_litestream_seq', '_litestream_lock')"
    }

    /// Whether `name` is one of Litestream's tables.
    public static func contains(_ name: String) -> Bool {
        names.contains(name.lowercased())
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
            try db.execute(sql: "DROP TABLE \(name.quotedIdentifier)")
        }
    }
}
