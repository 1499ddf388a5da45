import GRDB

/// The objects of a database as `sqlite_schema` lists them, with the SQL that made each:
/// what the planner creates, drops and copies between.
///
/// SQLite's own objects (`sqlite_*`), the daemon's (`accountd_*`) and the shadow tables of
/// virtual tables (which their virtual table makes) are left out. Keys are lowercased names.
struct SchemaCatalog: Sendable {
    /// One object: its name as written, the table it belongs to, and its `CREATE` statement.
    struct Object: Sendable {
        var name: String
        var table: String
        var sql: String
        /// Its place in `sqlite_schema`: objects are made again in this order, so a view comes after what it reads.
        var position: Int
    }

    var tables: [String: Object] = [:]
    var indexes: [String: Object] = [:]
    var views: [String: Object] = [:]
    var triggers: [String: Object] = [:]
    private var count = 0

    /// Reads the catalog of the `main` database of `db`.
    static func read(_ db: Database) throws -> SchemaCatalog {
        let shadows = Set(
            try String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_list WHERE schema = 'main' AND type = 'shadow'"))
        var catalog = SchemaCatalog()
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT type, name, tbl_name, sql FROM sqlite_master
                WHERE sql IS NOT NULL
                  AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                  AND name NOT LIKE 'accountd\\_%' ESCAPE '\\'
                  AND tbl_name NOT LIKE 'accountd\\_%' ESCAPE '\\'
                ORDER BY rowid
                """)
        {
            let object = Object(
                name: row["name"], table: (row["tbl_name"] as String).lowercased(), sql: row["sql"], position: catalog.count)
            catalog.count += 1
            let key = object.name.lowercased()
            switch row["type"] as String {
            case "table" where !shadows.contains(key): catalog.tables[key] = object
            case "index": catalog.indexes[key] = object
            case "view": catalog.views[key] = object
            case "trigger": catalog.triggers[key] = object
            default: break
            }
        }
        return catalog
    }

    /// A new in-memory database with these tables and indexes, but no rows, views or triggers:
    /// where the planner sees the tables as drops and renames leave them.
    func emptyCopy() throws -> DatabaseQueue {
        let queue = try DatabaseQueue(configuration: Connections.configuration(foreignKeys: false, label: "declarative-scratch"))
        try queue.writeWithoutTransaction { db in
            for object in tables.values.sorted(by: { $0.position < $1.position }) { try db.execute(sql: object.sql) }
            for object in indexes.values.sorted(by: { $0.position < $1.position }) { try db.execute(sql: object.sql) }
        }
        return queue
    }
}
