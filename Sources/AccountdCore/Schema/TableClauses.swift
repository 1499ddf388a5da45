/// The clauses of a `CREATE TABLE` statement that SQLite's pragmas do not report: a
/// generated column's expression, and the `ON CONFLICT` of each constraint.
///
/// SQLite has parsed and accepted the statement already (it comes from `sqlite_schema`);
/// this only walks its top-level items, the text between the outer parentheses cut at
/// commas outside nested parentheses.
struct TableClauses {
    /// Column name (lowercased) to its generated expression, normalised.
    var generated: [String: String] = [:]
    /// Column name (lowercased) to its `NOT NULL` conflict clause, e.g. `not null on conflict replace`.
    var columnConflicts: [String: [String]] = [:]
    /// The keys' conflict clauses, e.g. `unique (a, b) on conflict ignore`, whether declared on
    /// the table or on a column.
    var tableConflicts: [String] = []

    /// The foreign keys declared `DEFERRABLE INITIALLY DEFERRED`, each as its child columns
    /// and parent table, lowercased (`a,b>parent`): `PRAGMA foreign_key_list` does not say.
    var deferredForeignKeys: Set<String> = []

    private static let constraintStarts: Set<String> = ["constraint", "primary", "unique", "check", "foreign"]

    /// Reads the clauses of `tokens`; `identifiers` as in ``SQLLexer/normalize(_:identifiers:)``.
    init(_ tokens: [SQLLexer.Token], identifiers: Set<String> = []) {
        for item in Self.items(tokens) {
            guard let first = item.first else { continue }
            if first.kind == .word, Self.constraintStarts.contains(first.normalized) {
                tableConflicts += Self.tableConflicts(item, identifiers)
                if let key = Self.deferredForeignKey(item, column: nil) { deferredForeignKeys.insert(key) }
                continue
            }
            guard first.isCreatedName else { continue }
            let column = first.nameValue
            if let key = Self.deferredForeignKey(item, column: column) { deferredForeignKeys.insert(key) }
            let rest = item.dropFirst()
            if let expression = Self.generatedExpression(rest, identifiers) { generated[column] = expression }
            for (kind, resolution) in Self.conflicts(rest) {
                // A column's UNIQUE or PRIMARY KEY is the same key as the table constraint on
                // that one column, and is recorded the same way.
                if kind == "not null" {
                    columnConflicts[column, default: []].append("not null on conflict \(resolution)")
                } else {
                    tableConflicts.append("\(kind) (\(column)) on conflict \(resolution)")
                }
            }
        }
    }

    /// The top-level items of the column list.
    static func items(_ tokens: [SQLLexer.Token]) -> [ArraySlice<SQLLexer.Token>] {
        guard let open = tokens.firstIndex(where: { $0.raw == "(" }) else { return [] }
        var items: [ArraySlice<SQLLexer.Token>] = []
        var depth = 0
        var start = open + 1
        for index in (open + 1)..<tokens.count {
            let raw = tokens[index].raw
            if raw == "(" { depth += 1 }
            if raw == ")" {
                if depth == 0 {
                    items.append(tokens[start..<index])
                    return items
                }
                depth -= 1
            }
            if raw == "," && depth == 0 {
                items.append(tokens[start..<index])
                start = index + 1
            }
        }
        return items
    }

    /// `AS (expr)` at the item's top level, normalised.
    private static func generatedExpression(_ item: ArraySlice<SQLLexer.Token>, _ identifiers: Set<String>) -> String? {
        var depth = 0
        for index in item.indices {
            let token = item[index]
            if token.raw == "(" { depth += 1 }
            if token.raw == ")" { depth -= 1 }
            guard depth == 0, token.isKeyword("as"), index + 1 < item.endIndex, item[index + 1].raw == "(" else { continue }
            guard let close = matchingParenthesis(item, from: index + 1) else { return nil }
            return SQLLexer.normalize(item[(index + 2)..<close], identifiers: identifiers)
        }
        return nil
    }

    /// Each `ON CONFLICT x` of a column's item with the constraint it belongs to (`not null`,
    /// `unique`, `primary key`); `abort`, the default, is left out.
    private static func conflicts(_ item: ArraySlice<SQLLexer.Token>) -> [(kind: String, resolution: String)] {
        var out: [(String, String)] = []
        var kind = ""
        for index in item.indices {
            let token = item[index]
            if token.isKeyword("null"), index > item.startIndex, item[index - 1].isKeyword("not") { kind = "not null" }
            if token.isKeyword("unique") { kind = "unique" }
            if token.isKeyword("primary") { kind = "primary key" }
            guard token.isKeyword("on"), index + 2 < item.endIndex, item[index + 1].isKeyword("conflict") else { continue }
            let resolution = item[index + 2].normalized
            if resolution != "abort" { out.append((kind, resolution)) }
        }
        return out
    }

    /// `PRIMARY KEY (...) ON CONFLICT x` or `UNIQUE (...) ON CONFLICT x` of a table constraint.
    private static func tableConflicts(_ item: ArraySlice<SQLLexer.Token>, _ identifiers: Set<String>) -> [String] {
        guard let on = item.indices.first(where: { item[$0].isKeyword("on") && $0 + 2 < item.endIndex && item[$0 + 1].isKeyword("conflict") }),
            let open = item.indices.first(where: { item[$0].raw == "(" }), open < on,
            let close = matchingParenthesis(item, from: open)
        else { return [] }
        let resolution = item[on + 2].normalized
        guard resolution != "abort" else { return [] }
        let kind = item.contains(where: { $0.isKeyword("primary") }) ? "primary key" : "unique"
        return ["\(kind) (\(SQLLexer.normalize(item[(open + 1)..<close], identifiers: identifiers))) on conflict \(resolution)"]
    }

    /// `a,b>parent` for an item whose `REFERENCES parent` is `DEFERRABLE INITIALLY DEFERRED`;
    /// `column` for a column's item, else the columns of `FOREIGN KEY (a, b)`.
    static func deferredForeignKey(_ item: ArraySlice<SQLLexer.Token>, column: String?) -> String? {
        guard let references = item.indices.first(where: { item[$0].isKeyword("references") }),
            references + 1 < item.endIndex, item[references + 1].isCreatedName,
            let deferrable = item.indices.first(where: { $0 > references && item[$0].isKeyword("deferrable") }),
            !item[deferrable - 1].isKeyword("not"), deferrable + 2 < item.endIndex,
            item[deferrable + 1].isKeyword("initially"), item[deferrable + 2].isKeyword("deferred")
        else { return nil }
        var columns: [String] = []
        if let column {
            columns = [column]
        } else if let open = item.indices.first(where: { item[$0].raw == "(" }), open < references,
            let close = matchingParenthesis(item, from: open)
        {
            columns = item[(open + 1)..<close].filter(\.isCreatedName).map(\.nameValue)
        }
        return columns.joined(separator: ",") + ">" + item[references + 1].nameValue
    }

    private static func matchingParenthesis(_ item: ArraySlice<SQLLexer.Token>, from open: Int) -> Int? {
        var depth = 0
        for index in open..<item.endIndex {
            if item[index].raw == "(" { depth += 1 }
            if item[index].raw == ")" {
                depth -= 1
                if depth == 0 { return index }
            }
        }
        return nil
    }
}
