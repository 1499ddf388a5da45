import GRDB

/// Reads a database's ``NormalizedSchema`` from `sqlite_master` and SQLite's
/// table-valued pragmas.
enum SchemaReader {
    /// The schema of the `main` database, without `sqlite_*`, `accountd_*` and Litestream's
    /// `_litestream_*` objects (``LitestreamTables``).
    static func read(_ db: Database) throws -> NormalizedSchema {
        var schema = NormalizedSchema()
        for row in try Row.fetchAll(db, sql: definitionsQuery) {
            let type: String = row["type"]
            let name: String = row["name"]
            let key = name.lowercased()
            let sql: String? = row["sql"]
            switch type {
            case "table":
                schema.tables[key] = try readTable(db, name: name, sql: sql ?? "")
            case "index":
                if let sql { schema.indexes[key] = SQLLexer.normalize(sql) }
            case "view":
                if let sql { schema.views[key] = SQLLexer.normalize(sql) }
            case "trigger":
                if let sql { schema.triggers[key] = SQLLexer.normalize(sql) }
            default:
                break
            }
        }
        return schema
    }

    /// The `sqlite_master` rows ``read(_:)`` reads the schema from, as one text: equal texts
    /// are equal schemas (see ``MatchedSchemas``).
    static func definitions(_ db: Database) throws -> String {
        try Row.fetchAll(db, sql: definitionsQuery).map { row in
            [row["type"], row["name"], row["tbl_name"], row["sql"] ?? ""].joined(separator: "\u{1F}")
        }.joined(separator: "\u{1E}")
    }

    private static let definitionsQuery = """
        SELECT type, name, tbl_name, sql FROM sqlite_master
        WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
          AND name NOT LIKE 'accountd\\_%' ESCAPE '\\'
          AND tbl_name NOT LIKE 'accountd\\_%' ESCAPE '\\'
          AND \(LitestreamTables.excluded("tbl_name"))
        """

    /// The names of the daemon's own objects and of the bundle's objects that use the reserved prefix.
    static func reservedObjects(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db, sql: "SELECT name FROM sqlite_master WHERE name LIKE 'accountd\\_%' ESCAPE '\\' ORDER BY name")
    }

    private static func readTable(_ db: Database, name: String, sql: String) throws -> NormalizedSchema.Table {
        let tokens = SQLLexer.tokens(sql)
        var options: [String] = []
        if tokens.count > 2, tokens[1].isKeyword("virtual") {
            // A virtual table's shape is its module and arguments.
            return NormalizedSchema.Table(
                columns: [], foreignKeys: [], checks: [], uniques: [], options: ["virtual " + SQLLexer.normalize(sql)])
        }
        let clauses = TableClauses(tokens)
        let columns = try Row.fetchAll(db, sql: "SELECT * FROM pragma_table_xinfo(?)", arguments: [name]).map { row in
            let column: String = row["name"]
            return NormalizedSchema.Column(
                name: column.lowercased(),
                type: SQLLexer.normalize(row["type"] as String? ?? "").uppercased(),
                notNull: row["notnull"] as Int != 0,
                defaultValue: (row["dflt_value"] as String?).map(normalizeDefault),
                primaryKeyPosition: row["pk"],
                hidden: row["hidden"],
                collation: ColumnCollation.of(db, table: name, column: column),
                generated: clauses.generated[column.lowercased()],
                conflicts: clauses.columnConflicts[column.lowercased()] ?? [])
        }
        var keys: [Int: NormalizedSchema.ForeignKey] = [:]
        for row in try Row.fetchAll(
            db, sql: "SELECT * FROM pragma_foreign_key_list(?) ORDER BY id, seq", arguments: [name])
        {
            let id: Int = row["id"]
            var key =
                keys[id]
                ?? NormalizedSchema.ForeignKey(
                    columns: [], table: (row["table"] as String).lowercased(), targetColumns: [],
                    onUpdate: row["on_update"], onDelete: row["on_delete"])
            key.columns.append((row["from"] as String).lowercased())
            key.targetColumns.append((row["to"] as String?)?.lowercased() ?? "")
            keys[id] = key
        }
        var uniques: [String] = []
        for row in try Row.fetchAll(db, sql: "SELECT name, origin FROM pragma_index_list(?)", arguments: [name])
        where ["u", "pk"].contains(row["origin"] as String) {
            // Each key column with its collation when it is not BINARY: a UNIQUE under NOCASE
            // refuses what one under BINARY accepts.
            let indexColumns = try String.fetchAll(
                db,
                sql: """
                    SELECT lower(coalesce(name, '<expression>')) || CASE WHEN lower(coll) = 'binary' THEN '' ELSE ' collate ' || lower(coll) END
                    FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno
                    """,
                arguments: [row["name"] as String])
            let list = "(" + indexColumns.joined(separator: ", ") + ")"
            if (row["origin"] as String) == "u" {
                uniques.append(list)
            } else if list.contains(" collate ") {
                uniques.append("primary key " + list)
            }
        }
        if tokens.contains(where: { $0.isKeyword("autoincrement") }) { options.append("autoincrement") }
        options += trailingOptions(tokens)
        return NormalizedSchema.Table(
            columns: columns, foreignKeys: keys.values.sorted(), checks: checks(in: tokens).sorted(),
            uniques: uniques.sorted(), options: options.sorted(), conflicts: clauses.tableConflicts.sorted())
    }

    /// The normalised bodies of every `CHECK (...)` in a CREATE TABLE statement.
    static func checks(in tokens: [SQLLexer.Token]) -> [String] {
        var out: [String] = []
        var index = 0
        while index < tokens.count {
            if tokens[index].isKeyword("check"), index + 1 < tokens.count, tokens[index + 1].raw == "(" {
                var depth = 0
                var end = index + 1
                while end < tokens.count {
                    if tokens[end].raw == "(" { depth += 1 }
                    if tokens[end].raw == ")" {
                        depth -= 1
                        if depth == 0 { break }
                    }
                    end += 1
                }
                out.append(SQLLexer.normalize(tokens[(index + 2)..<min(end, tokens.count)]))
                index = end
            }
            index += 1
        }
        return out
    }

    /// Table options after the closing parenthesis: `without rowid`, `strict`.
    private static func trailingOptions(_ tokens: [SQLLexer.Token]) -> [String] {
        guard let close = tokens.lastIndex(where: { $0.raw == ")" }) else { return [] }
        let rest = tokens[(close + 1)...].filter { $0.kind == .word }.map(\.normalized)
        var options: [String] = []
        if rest.contains("without") { options.append("without rowid") }
        if rest.contains("strict") { options.append("strict") }
        return options
    }

    /// A default value in canonical form: `(0)` and `0` are the same default.
    static func normalizeDefault(_ text: String) -> String {
        var tokens = SQLLexer.tokens(text)[...]
        while tokens.count >= 2, tokens.first?.raw == "(", tokens.last?.raw == ")", wrapsWhole(tokens) {
            tokens = tokens.dropFirst().dropLast()
        }
        return SQLLexer.normalize(tokens)
    }

    private static func wrapsWhole(_ tokens: ArraySlice<SQLLexer.Token>) -> Bool {
        var depth = 0
        for (offset, token) in tokens.enumerated() {
            if token.raw == "(" { depth += 1 }
            if token.raw == ")" {
                depth -= 1
                if depth == 0 && offset != tokens.count - 1 { return false }
            }
        }
        return true
    }
}
