import GRDB

/// The connection-level settings a bundle script may change with a `PRAGMA`, read before
/// the script runs and put back after it.
///
/// A setting such as `legacy_alter_table` lasts as long as the connection, not the
/// file. If one migration turned it on and the next ran with it, an account migrated
/// from version 1 would get another schema than one migrated from version 2, which runs
/// the next migration on a new connection. So every script (each migration, `schema.sql`,
/// `on-open.sql`), at bundle load and on every account alike, starts from the connection
/// as accountd opened it.
struct ConnectionSettings {
    /// The settings that change what a statement does or how durable it is; each can be
    /// read back with `PRAGMA name`.
    static let names = [
        "legacy_alter_table", "recursive_triggers", "reverse_unordered_selects", "defer_foreign_keys",
        "ignore_check_constraints", "query_only", "trusted_schema", "automatic_index", "cell_size_check",
        "synchronous", "busy_timeout", "cache_size", "temp_store",
    ]

    private var values: [(name: String, value: Int64)]

    /// The settings of `db` as they are now.
    static func read(_ db: Database) throws -> ConnectionSettings {
        var values: [(String, Int64)] = []
        for name in names {
            if let value = try Int64.fetchOne(db, sql: "PRAGMA \(name)") { values.append((name, value)) }
        }
        return ConnectionSettings(values: values)
    }

    /// Puts every setting back as it was read. `case_sensitive_like` cannot be read, and goes
    /// back to SQLite's default, off. Every `TEMP` table, view, index and trigger the script
    /// made is dropped: those too last as long as the connection, and a temporary trigger or
    /// view left by one migration would change what the next one does.
    func restore(_ db: Database) throws {
        for (name, value) in values where try Int64.fetchOne(db, sql: "PRAGMA \(name)") != value {
            try db.execute(sql: "PRAGMA \(name) = \(value)")
        }
        try db.execute(sql: "PRAGMA case_sensitive_like = OFF")
        try Self.dropTemporaryObjects(db)
    }

    /// Drops every object of the `temp` schema: triggers and views first, then tables (which
    /// take their indexes with them).
    static func dropTemporaryObjects(_ db: Database) throws {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT type, name FROM sqlite_temp_master
                WHERE type IN ('trigger', 'view', 'table') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                ORDER BY CASE type WHEN 'trigger' THEN 0 WHEN 'view' THEN 1 ELSE 2 END
                """)
        for row in rows {
            let type: String = row["type"]
            let name: String = row["name"]
            try db.execute(sql: "DROP \(type.uppercased()) IF EXISTS temp.\(name.quotedIdentifier)")
        }
    }
}
