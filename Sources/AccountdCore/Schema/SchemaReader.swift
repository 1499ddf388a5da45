import GRDB

/// Reads a database's ``NormalizedSchema`` from `sqlite_master` and SQLite's
/// table-valued pragmas.
enum SchemaReader {
    /// The schema of the `main` database, without `sqlite_*`, `accountd_*` and Litestream's
    /// `_litestream_*` objects (``LitestreamTables``).
    static func read(_ db: Database) throws -> NormalizedSchema {
        var schema = NormalizedSchema()
        let names = try identifiers(db)
        for row in try Row.fetchAll(db, sql: definitionsQuery) {
            let type: String = row["type"]
            let name: String = row["name"]
            let key = name.lowercased()
            let sql: String? = row["sql"]
            switch type {
            case "table":
                schema.tables[key] = try readTable(db, name: name, sql: sql ?? "", identifiers: names)
            case "index":
                if let sql { schema.indexes[key] = SQLLexer.normalize(sql, identifiers: names) }
            case "view":
                if let sql { schema.views[key] = SQLLexer.normalize(sql, identifiers: names) }
            case "trigger":
                if let sql { schema.triggers[key] = SQLLexer.normalize(sql, identifiers: names) }
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

    /// Every object name and every column name of a table or view, lowercased: a double-quoted
    /// token equal to one of these is taken for an identifier, any other for a string literal.
    /// Only the objects ``read(_:)`` reads count: the daemon's `accountd_*` tables are in an
    /// account but not in the bundle's target, and their columns (`name`, `key`, ...) would
    /// otherwise make `"Name"` an identifier on one side and a string on the other.
    static func identifiers(_ db: Database) throws -> Set<String> {
        let objects = try Row.fetchAll(db, sql: definitionsQuery)
        var names = Set(objects.map { ($0["name"] as String).lowercased() })
        for row in objects where ["table", "view"].contains(row["type"] as String) {
            let table: String = row["name"]
            // A virtual table whose module is missing, or a broken view, has no columns to read.
            let columns = (try? String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_xinfo(?)", arguments: [table])) ?? []
            names.formUnion(columns)
        }
        return names
    }

    /// Every object that is not the bundle's to have, as `kind name` (`trigger spy on accountd_prefs`):
    /// one named `accountd_*` or like Litestream's tables, or an index or trigger on one of those.
    /// A bundle script that leaves any behind is refused, however it made them (`CREATE`, or
    /// `ALTER TABLE ... RENAME TO`).
    /// With `litestream` false, Litestream's tables are not counted (a template copied from a
    /// replicated file may carry them; they are dropped from every copy).
    static func reservedReferences(_ db: Database, litestream: Bool = true) throws -> [String] {
        let litestreamCondition =
            litestream ? "OR NOT (\(LitestreamTables.excluded("name"))) OR NOT (\(LitestreamTables.excluded("tbl_name")))" : ""
        return try Row.fetchAll(
            db,
            sql: """
                SELECT type, name, tbl_name FROM sqlite_master
                WHERE name LIKE 'accountd\\_%' ESCAPE '\\' OR tbl_name LIKE 'accountd\\_%' ESCAPE '\\' \(litestreamCondition)
                ORDER BY name
                """
        ).map { row in
            let (type, name, table): (String, String, String) = (row["type"], row["name"], row["tbl_name"])
            return name == table ? "\(type) \(name)" : "\(type) \(name) on \(table)"
        }
    }

    private static func readTable(_ db: Database, name: String, sql: String, identifiers: Set<String>) throws -> NormalizedSchema.Table {
        let tokens = SQLLexer.tokens(sql)
        var options: [String] = []
        if tokens.count > 2, tokens[1].isKeyword("virtual") {
            // A virtual table's shape is its module and arguments.
            return NormalizedSchema.Table(
                columns: [], foreignKeys: [], checks: [], uniques: [], options: ["virtual " + SQLLexer.normalize(sql)])
        }
        let clauses = TableClauses(tokens, identifiers: identifiers)
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
        for (id, key) in keys where clauses.deferredForeignKeys.contains(key.columns.joined(separator: ",") + ">" + key.table) {
            keys[id]?.deferred = true
        }
        var uniques: [String] = []
        var hasPrimaryKeyIndex = false
        for row in try Row.fetchAll(db, sql: "SELECT name, origin FROM pragma_index_list(?)", arguments: [name])
        where ["u", "pk"].contains(row["origin"] as String) {
            // Each key column with its collation when it is not BINARY: a UNIQUE under NOCASE
            // refuses what one under BINARY accepts; and DESC, which orders a WITHOUT ROWID table.
            let indexColumns = try String.fetchAll(
                db,
                sql: """
                    SELECT lower(coalesce(name, '<expression>')) || CASE WHEN lower(coll) = 'binary' THEN '' ELSE ' collate ' || lower(coll) END
                        || CASE WHEN "desc" THEN ' desc' ELSE '' END
                    FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno
                    """,
                arguments: [row["name"] as String])
            let list = "(" + indexColumns.joined(separator: ", ") + ")"
            if (row["origin"] as String) == "pk" { hasPrimaryKeyIndex = true }
            if (row["origin"] as String) == "u" {
                uniques.append(list)
            } else if list.contains(" collate ") || list.contains(" desc") {
                uniques.append("primary key " + list)
            }
        }
        if tokens.contains(where: { $0.isKeyword("autoincrement") }) { options.append("autoincrement") }
        options += trailingOptions(tokens)
        // `INTEGER PRIMARY KEY DESC` (and a few other spellings) is an ordinary column with its own
        // index, not the rowid: NULL is stored as NULL instead of taking a new rowid, and a rebuild
        // keeps other values. A rowid alias has no index of its own.
        let keyColumns = columns.filter { $0.primaryKeyPosition > 0 }
        if hasPrimaryKeyIndex, !options.contains("without rowid"), keyColumns.count == 1, keyColumns[0].type == "INTEGER" {
            options.append("integer primary key is not the rowid")
        }
        return NormalizedSchema.Table(
            columns: columns, foreignKeys: keys.values.sorted(), checks: checks(in: tokens, identifiers: identifiers).sorted(),
            uniques: uniques.sorted(), options: options.sorted(), conflicts: clauses.tableConflicts.sorted())
    }

    /// The normalised bodies of every `CHECK (...)` in a CREATE TABLE statement.
    static func checks(in tokens: [SQLLexer.Token], identifiers: Set<String> = []) -> [String] {
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
                out.append(SQLLexer.normalize(tokens[(index + 2)..<min(end, tokens.count)], identifiers: identifiers))
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
    ///
    /// No column is in scope in a default, so `DEFAULT "Pending"` and `DEFAULT Pending` are the
    /// string 'Pending', and are written so: their case is kept, and they equal `DEFAULT 'Pending'`.
    static func normalizeDefault(_ text: String) -> String {
        var tokens = SQLLexer.tokens(text)[...]
        while tokens.count >= 2, tokens.first?.raw == "(", tokens.last?.raw == ")", wrapsWhole(tokens) {
            tokens = tokens.dropFirst().dropLast()
        }
        func literal(_ value: String) -> String { "'" + value.replacingOccurrences(of: "'", with: "''") + "'" }
        if tokens.count == 1, let word = tokens.first, word.kind == .word, !defaultKeywords.contains(word.normalized) {
            return literal(String(word.raw))
        }
        return tokens.map { token in
            token.kind == .quotedIdentifier && token.raw.first == "\"" ? literal(SQLLexer.Token.unquote(token.raw)) : SQLLexer.normalize([token][...])
        }.joined(separator: " ")
    }

    private static let defaultKeywords: Set<String> = ["null", "true", "false", "current_time", "current_date", "current_timestamp"]

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
