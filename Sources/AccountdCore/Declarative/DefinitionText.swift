/// Small edits of the `CREATE` statements SQLite stores in `sqlite_schema`, by token
/// position: the name of the object, and the text of one column's definition.
///
/// This is not a SQL parser: SQLite has already parsed and accepted every statement
/// these functions see, and they only find a name token or a top-level comma.
enum DefinitionText {
    /// A name as an SQL identifier, always double-quoted.
    static func quote(_ name: String) -> String {
        name.quotedIdentifier
    }

    /// `sql` (a `CREATE TABLE`, `CREATE INDEX` ...) with the created object renamed to `name`.
    static func renamingCreated(_ sql: String, to name: String) -> String? {
        let tokens = SQLLexer.tokens(sql)
        guard let index = createdNameIndex(tokens) else { return nil }
        return replacing(sql, tokens[index], with: quote(name))
    }

    /// A `CREATE INDEX` statement with the indexed table renamed to `table`.
    static func indexOnTable(_ sql: String, table: String) -> String? {
        let tokens = SQLLexer.tokens(sql)
        guard let index = createdNameIndex(tokens),
            let on = tokens[(index + 1)...].firstIndex(where: { $0.isKeyword("on") }), on + 1 < tokens.count
        else { return nil }
        return replacing(sql, tokens[on + 1], with: quote(table))
    }

    /// The text of `column`'s definition inside a `CREATE TABLE` statement, as written:
    /// what `ALTER TABLE ADD COLUMN` takes.
    static func columnDefinition(_ sql: String, column: String) -> String? {
        let tokens = SQLLexer.tokens(sql)
        guard let name = createdNameIndex(tokens), let open = tokens[(name + 1)...].firstIndex(where: { $0.raw == "(" })
        else { return nil }
        var depth = 0
        var itemStart = open + 1
        for index in (open + 1)..<tokens.count {
            let token = tokens[index]
            if token.raw == "(" { depth += 1 }
            let closesList = token.raw == ")" && depth == 0
            if token.raw == ")" && depth > 0 { depth -= 1 }
            guard closesList || (token.raw == "," && depth == 0) else { continue }
            if itemStart < index, tokens[itemStart].isName, tokens[itemStart].normalized == column {
                let utf8 = Array(sql.utf8)
                return String(decoding: utf8[tokens[itemStart].start..<tokens[index - 1].end], as: UTF8.self)
            }
            if closesList { return nil }
            itemStart = index + 1
        }
        return nil
    }

    /// The position of the created object's name: after `CREATE [TEMP|UNIQUE|VIRTUAL] KIND [IF NOT EXISTS] [schema.]`.
    private static func createdNameIndex(_ tokens: [SQLLexer.Token]) -> Int? {
        guard let kind = tokens.firstIndex(where: { ["table", "index", "view", "trigger"].contains($0.normalized) && $0.kind == .word })
        else { return nil }
        var index = kind + 1
        if index + 2 < tokens.count, tokens[index].isKeyword("if"), tokens[index + 1].isKeyword("not"), tokens[index + 2].isKeyword("exists") {
            index += 3
        }
        if index + 2 < tokens.count, tokens[index + 1].raw == "." { index += 2 }
        return index < tokens.count && tokens[index].isCreatedName ? index : nil
    }

    private static func replacing(_ sql: String, _ token: SQLLexer.Token, with text: String) -> String {
        let utf8 = Array(sql.utf8)
        return String(decoding: utf8[..<token.start], as: UTF8.self) + text + String(decoding: utf8[token.end...], as: UTF8.self)
    }
}
