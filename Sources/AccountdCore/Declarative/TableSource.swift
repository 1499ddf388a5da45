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

        /// The lowercased name of `table`'s rowid alias (its `INTEGER PRIMARY KEY` column), nil when it has none.
        ///
        /// SQLite decides: a rowid table whose one-column primary key has no index of its own
        /// (`PRAGMA index_list` origin `pk`) keeps that key as the rowid.
        static func rowidAlias(_ db: Database, table: String) throws -> String? {
            let keys = try String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_xinfo(?) WHERE pk > 0", arguments: [table])
            guard keys.count == 1,
                try Bool.fetchOne(
                    db, sql: "SELECT wr = 0 AND type = 'table' FROM pragma_table_list WHERE schema = 'main' AND name = ? COLLATE NOCASE",
                    arguments: [table]) == true,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM pragma_index_list(?) WHERE origin = 'pk'", arguments: [table]) == 0
            else { return nil }
            return keys[0]
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
    /// The current table's rowid alias (its `INTEGER PRIMARY KEY`), lowercased; nil when it has none.
    var currentAlias: String? = nil
    /// The target table's rowid alias, lowercased; nil when it has none.
    var targetAlias: String? = nil

    /// How a rebuild carries each row's rowid into the new table.
    enum RowidCopy: Equatable {
        /// Nothing to carry: the old table has no rowid, the new one has none, or the new
        /// one's `INTEGER PRIMARY KEY` is the rowid and is copied as a column.
        case none
        /// `INSERT INTO new (into, ...) SELECT from, ...`.
        case copy(from: String, into: String)
        /// Columns named `rowid`, `oid` and `_rowid_` hide it on one side: it cannot be carried.
        case impossible
    }

    /// How a rebuild into a table that is `WITHOUT ROWID` when `targetWithoutRowid` carries the rowids.
    ///
    /// The rowid is read by any of `rowid`, `_rowid_`, `oid` that no column of the table
    /// (as renamed by then) is named, or by its alias column; it is written under any of
    /// them that no column of the new table is named.
    func rowidCopy(targetWithoutRowid: Bool) -> RowidCopy {
        guard hasRowid, !targetWithoutRowid, targetAlias == nil else { return .none }
        let names = ["rowid", "_rowid_", "oid"]
        // At the rebuild, the old table's columns carry their new names.
        var renamedKeys: [String: String] = [:]
        for column in targetColumns { if let old = origin[column.key] { renamedKeys[old.key] = column.key } }
        let currentKeys = Set(currentColumns.map { renamedKeys[$0.key] ?? $0.key })
        let targetKeys = Set(targetColumns.map(\.key))
        let from = names.first { !currentKeys.contains($0) } ?? currentAlias.map { DefinitionText.quote(renamedKeys[$0] ?? $0) }
        guard let from, let into = names.first(where: { !targetKeys.contains($0) }) else { return .impossible }
        return .copy(from: from, into: into)
    }

    /// What a copy writes into `column`: the old column, made to fit a new `NOT NULL DEFAULT`
    /// with `coalesce`, or the default for a new column. Nil for a generated column, which is never written.
    func value(of column: Column, renamed: Bool) -> String? {
        guard column.hidden == 0 else { return nil }
        guard let old = origin[column.key] else { return column.defaultValue.map(Self.defaultExpression) ?? "NULL" }
        let name = DefinitionText.quote(renamed ? column.name : old.name)
        if column.notNull, !old.notNull, let value = column.defaultValue { return "coalesce(\(name), \(Self.defaultExpression(value)))" }
        return name
    }

    /// A column's default (`dflt_value` of `PRAGMA table_xinfo`, as written after `DEFAULT`)
    /// as an expression that gives the value SQLite stores, whatever the columns of the
    /// table it is selected from.
    ///
    /// SQLite reads a default written as a lone identifier (`DEFAULT "pending"`, `DEFAULT
    /// [x]`, `DEFAULT pending`) as the string of its name (and `true`/`false` as 1/0); in a
    /// `SELECT` the same text would name a column of the old table. Such a default becomes
    /// a string literal; any other default (a literal, a parenthesised expression, which
    /// cannot name a column, `CURRENT_TIMESTAMP`) is kept as written.
    static func defaultExpression(_ value: String) -> String {
        let tokens = SQLLexer.tokens(value)
        guard tokens.count == 1, let token = tokens.first, token.kind == .word || token.kind == .quotedIdentifier else { return value }
        if token.kind == .word {
            switch token.normalized {
            case "null", "current_time", "current_date", "current_timestamp": return value
            case "true": return "1"
            case "false": return "0"
            default: return String(token.raw).quotedSQLString
            }
        }
        return SQLLexer.Token.unquote(token.raw).quotedSQLString
    }

    /// `SELECT` over the current file giving the rows as the new table would hold them,
    /// under the target's column names: what the loss checks count in.
    var projection: String {
        let values = targetColumns.map { column in
            (value(of: column, renamed: false) ?? "NULL") + " AS " + DefinitionText.quote(column.name)
        }
        return "SELECT \(values.joined(separator: ", ")) FROM \(DefinitionText.quote(currentName))"
    }

    /// Current columns that no target column is copied from: their values go when the table
    /// is rebuilt. A column that becomes generated is one of them: its new values are computed,
    /// and the ones it held are gone.
    var droppedColumns: [Column] {
        let used = Set(targetColumns.filter { $0.hidden == 0 }.compactMap { origin[$0.key]?.key })
        return currentColumns.filter { $0.hidden == 0 && !used.contains($0.key) }
    }

    /// Whether the target column copied from `column` is generated (its values are computed, not copied).
    func becomesGenerated(_ column: Column) -> Bool {
        targetColumns.contains { $0.hidden != 0 && origin[$0.key]?.key == column.key }
    }
}
