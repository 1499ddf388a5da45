import GRDB

/// Where the rows of one kept table of the target come from in the current file: the
/// table (perhaps under its old name) and, for each target column, the old column or the
/// default that fills it.
struct TableSource {
    /// One column of a table, as `PRAGMA table_xinfo` gives it.
    struct Column: Sendable {
        var name: String
        var notNull: Bool
        var defaultValue: String?
        var primaryKey: Int
        var hidden: Int
        var type: String

        var key: String { name.lowercased() }

        /// The lowercased names of the tables that have a rowid: ordinary tables not declared `WITHOUT ROWID`.
        static func tablesWithRowid(_ db: Database) throws -> Set<String> {
            Set(try String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND wr = 0"))
        }

        static func read(_ db: Database, table: String) throws -> [Column] {
            try Row.fetchAll(db, sql: "SELECT * FROM pragma_table_xinfo(?) ORDER BY cid", arguments: [table]).map { row in
                Column(
                    name: row["name"], notNull: (row["notnull"] as Int) != 0, defaultValue: row["dflt_value"], primaryKey: row["pk"],
                    hidden: row["hidden"], type: row["type"] ?? "")
            }
        }
    }

    /// The table's name in the target, as written there.
    var targetName: String
    /// The table's name in the current file (the old name of a renamed table).
    var currentName: String
    var targetColumns: [Column]
    var currentColumns: [Column]
    /// Target column key to the current column it is copied from (its old name when renamed).
    var origin: [String: Column]
    /// Whether the current table has a rowid (it is not `WITHOUT ROWID`).
    var hasRowid: Bool

    /// What a copy writes into `column`: the old column, made to fit a new `NOT NULL DEFAULT`
    /// with `coalesce`, or the default for a new column. Nil for a generated column, which is never written.
    func value(of column: Column, renamed: Bool) -> String? {
        guard column.hidden == 0 else { return nil }
        guard let old = origin[column.key] else { return column.defaultValue ?? "NULL" }
        let name = DefinitionText.quote(renamed ? column.name : old.name)
        if column.notNull, !old.notNull, let value = column.defaultValue { return "coalesce(\(name), \(value))" }
        return name
    }

    /// `SELECT` over the current file giving the rows as the new table would hold them,
    /// under the target's column names: what the loss checks count in.
    var projection: String {
        let values = targetColumns.map { column in
            (value(of: column, renamed: false) ?? "NULL") + " AS " + DefinitionText.quote(column.name)
        }
        return "SELECT \(values.joined(separator: ", ")) FROM \(DefinitionText.quote(currentName))"
    }

    /// Current columns that no target column is copied from: their values go when the table is rebuilt.
    var droppedColumns: [Column] {
        let used = Set(origin.values.map(\.key))
        return currentColumns.filter { $0.hidden == 0 && !used.contains($0.key) }
    }
}
