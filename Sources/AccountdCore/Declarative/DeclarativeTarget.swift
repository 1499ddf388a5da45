import GRDB

/// What the planner needs to know about a declarative `schema.sql`, read once when the
/// bundle loads, so that planning an account reads only the account's file.
struct DeclarativeTarget: Sendable {
    /// The objects and their SQL.
    var catalog: SchemaCatalog
    /// The normalised schema: what a migrated file must equal.
    var schema: NormalizedSchema
    /// Each table's columns, by lowercased table name.
    var columns: [String: [TableSource.Column]]
    /// Each table's unique column sets (see ``LossCheck/uniqueSets(_:table:)``).
    var uniqueSets: [String: Set<[String]>]
    /// Each table's rowid alias (its `INTEGER PRIMARY KEY` column), lowercased, by lowercased table name.
    var rowidAliases: [String: String] = [:]

    /// Reads the target from `db`, a database holding exactly `schema.sql`.
    static func read(_ db: Database) throws -> DeclarativeTarget {
        let catalog = try SchemaCatalog.read(db)
        var columns: [String: [TableSource.Column]] = [:]
        var uniqueSets: [String: Set<[String]>] = [:]
        var rowidAliases: [String: String] = [:]
        for (key, table) in catalog.tables {
            rowidAliases[key] = try TableSource.Column.rowidAlias(db, table: table.name)
            columns[key] = try TableSource.Column.read(db, table: table.name)
            uniqueSets[key] = try LossCheck.uniqueSets(db, table: table.name)
        }
        return DeclarativeTarget(catalog: catalog, schema: try SchemaReader.read(db), columns: columns, uniqueSets: uniqueSets,
            rowidAliases: rowidAliases)
    }
}
