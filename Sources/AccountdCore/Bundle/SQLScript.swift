import GRDBSQLite

/// A SQL file split into its top-level statements, each with the line it starts on.
///
/// Splitting follows SQLite's own rule (`sqlite3_complete`), so a semicolon inside
/// a string, a comment or a `CREATE TRIGGER ... BEGIN ... END` body does not end a
/// statement.
struct SQLScript: Sendable {
    /// One top-level statement.
    struct Statement: Sendable {
        /// The statement's text, including its closing semicolon.
        var text: String
        /// The 1-based line of its first token in the file.
        var line: Int
        /// Its tokens, comments dropped.
        var tokens: [SQLLexer.Token]

        /// The first keyword, lowercased (`create`, `pragma`, `begin`, ...).
        var verb: String { tokens.first.map { $0.normalized } ?? "" }

        /// For a `PRAGMA`: the pragma's name without a schema prefix, lowercased.
        var pragmaName: String? {
            guard verb == "pragma", tokens.count >= 2 else { return nil }
            if tokens.count >= 4, tokens[2].raw == "." { return tokens[3].normalized }
            return tokens[1].normalized
        }

        /// For a `PRAGMA`: whether it assigns a value (`PRAGMA x = v` or `PRAGMA x(v)`).
        var pragmaAssigns: Bool {
            tokens.contains { $0.raw == "=" || $0.raw == "(" }
        }

        /// The transaction-control or otherwise forbidden verb, if this statement is one.
        var forbiddenVerb: String? {
            let forbidden: Set<String> = [
                "begin", "commit", "end", "rollback", "savepoint", "release", "vacuum", "attach", "detach",
            ]
            return forbidden.contains(verb) ? verb.uppercased() : nil
        }

        /// The object a `CREATE` statement makes: its kind (`table`, `index`, `view`, `trigger`) and name.
        var createdObject: (kind: String, name: String)? {
            guard verb == "create" else { return nil }
            var index = 1
            let modifiers: Set<String> = ["temp", "temporary", "unique", "virtual"]
            while index < tokens.count, tokens[index].kind == .word, modifiers.contains(tokens[index].normalized) {
                index += 1
            }
            guard index < tokens.count else { return nil }
            let kind = tokens[index].normalized
            guard ["table", "index", "view", "trigger"].contains(kind) else { return nil }
            index += 1
            if index + 2 < tokens.count, tokens[index].isKeyword("if"), tokens[index + 1].isKeyword("not"),
                tokens[index + 2].isKeyword("exists")
            {
                index += 3
            }
            guard index < tokens.count, tokens[index].isName else { return nil }
            if index + 2 < tokens.count, tokens[index + 1].raw == ".", tokens[index + 2].isName {
                index += 2
            }
            return (kind, tokens[index].normalized)
        }

        /// The names this statement mentions, lowercased; used to say which statement touched an object.
        var mentionedNames: Set<String> {
            Set(tokens.filter(\.isName).map(\.normalized))
        }
    }

    /// The statements, in file order. Comment-only text is dropped.
    var statements: [Statement]

    init(_ text: String) {
        var statements: [Statement] = []
        let tokens = SQLLexer.tokens(text)
        var first = 0
        let utf8 = Array(text.utf8)
        for (index, token) in tokens.enumerated() where token.raw == ";" {
            let slice = tokens[first...index]
            let candidate = Self.text(utf8, from: slice.first!.start, to: token.end)
            if Self.isComplete(candidate) {
                if slice.count > 1 {
                    statements.append(Statement(text: candidate, line: slice.first!.line, tokens: Array(slice)))
                }
                first = index + 1
            }
        }
        if first < tokens.count {
            let slice = tokens[first...]
            let candidate = Self.text(utf8, from: slice.first!.start, to: slice.last!.end)
            statements.append(Statement(text: candidate, line: slice.first!.line, tokens: Array(slice)))
        }
        self.statements = statements
    }

    private static func text(_ utf8: [UInt8], from: Int, to: Int) -> String {
        String(decoding: utf8[from..<to], as: UTF8.self)
    }

    private static func isComplete(_ sql: String) -> Bool {
        sql.withCString { sqlite3_complete($0) != 0 }
    }
}
