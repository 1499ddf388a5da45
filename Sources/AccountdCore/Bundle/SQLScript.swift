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
            guard index < tokens.count, tokens[index].isCreatedName else { return nil }
            if index + 2 < tokens.count, tokens[index + 1].raw == ".", tokens[index + 2].isCreatedName {
                index += 2
            }
            return (kind, tokens[index].nameValue)
        }

        /// The objects this statement writes, drops, alters or hangs an index or trigger on,
        /// by name (lowercased, without a schema), wherever they appear in it, trigger
        /// bodies included: `DROP ... [IF EXISTS] x`, `ALTER TABLE x`, `RENAME TO x`, `INSERT|REPLACE INTO x`,
        /// `UPDATE [OR ...] x`, `DELETE FROM x`, and the table after `ON` in `CREATE INDEX`
        /// or `CREATE TRIGGER`. Reading an object is not counted.
        var changedObjects: [String] {
            func name(at index: Int) -> String? {
                guard index < tokens.count, tokens[index].isName else { return nil }
                if index + 2 < tokens.count, tokens[index + 1].raw == ".", tokens[index + 2].isName { return tokens[index + 2].normalized }
                return tokens[index].normalized
            }
            func isKeyword(_ index: Int, _ keyword: String) -> Bool { index < tokens.count && tokens[index].isKeyword(keyword) }
            var names: [String] = []
            let hangsOn = createdObject.map { $0.kind == "index" || $0.kind == "trigger" } ?? false
            var seenOn = false
            for index in tokens.indices {
                var target: Int?
                if isKeyword(index, "drop"), index + 1 < tokens.count, ["table", "index", "view", "trigger"].contains(tokens[index + 1].normalized) {
                    target = isKeyword(index + 2, "if") && isKeyword(index + 3, "exists") ? index + 4 : index + 2
                } else if isKeyword(index, "alter"), isKeyword(index + 1, "table") {
                    target = index + 2
                } else if isKeyword(index, "rename"), isKeyword(index + 1, "to"), index + 2 < tokens.count,
                    tokens[index + 2].isCreatedName
                {
                    // `ALTER TABLE t RENAME TO accountd_prefs` makes the reserved table as surely as CREATE does.
                    names.append(tokens[index + 2].nameValue)
                } else if isKeyword(index, "into") {
                    target = index + 1
                } else if isKeyword(index, "update") {
                    target = isKeyword(index + 1, "or") ? index + 3 : index + 1
                } else if isKeyword(index, "delete"), isKeyword(index + 1, "from") {
                    target = index + 2
                } else if hangsOn, !seenOn, isKeyword(index, "on") {
                    seenOn = true
                    target = index + 1
                }
                if let target, let object = name(at: target) { names.append(object) }
            }
            return names
        }

        /// The names this statement mentions, lowercased; used to say which statement touched an object.
        var mentionedNames: Set<String> {
            Set(tokens.filter(\.isName).map(\.normalized))
        }
    }

    /// The statements, in file order. Comment-only text is dropped.
    var statements: [Statement]

    /// Splits `text` where SQLite would: at each `;` after which `sqlite3_complete` says
    /// the text so far is whole statements. SQLite's own tokenizer decides what is a
    /// string, a comment or a trigger body, so a statement can never hide inside what
    /// accountd's lexer took for a comment or a string. The lexer only reads each
    /// statement's tokens afterwards.
    init(_ text: String) {
        let utf8 = Array(text.utf8)
        var statements: [Statement] = []
        var first = 0
        var line = 1
        func add(upTo end: Int) {
            let piece = String(decoding: utf8[first..<end], as: UTF8.self)
            let tokens = SQLLexer.tokens(piece).map { token in
                var token = token
                token.line += line - 1
                token.start += first
                token.end += first
                return token
            }
            if let start = tokens.first?.start, !(tokens.count == 1 && tokens[0].raw == ";") {
                statements.append(Statement(text: Self.text(utf8, from: start, to: end), line: tokens[0].line, tokens: tokens))
            }
            line += utf8[first..<end].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
            first = end
        }
        // sqlite3_complete reads up to a NUL: the byte after each `;` is set to 0 for the
        // call and put back, so no statement is copied to be checked.
        var buffer = utf8 + [0]
        for index in utf8.indices where utf8[index] == 0x3B {
            let saved = buffer[index + 1]
            buffer[index + 1] = 0
            let complete = buffer.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { sqlite3_complete($0.baseAddress! + first) != 0 }
            }
            buffer[index + 1] = saved
            if complete { add(upTo: index + 1) }
        }
        if first < utf8.count { add(upTo: utf8.count) }
        self.statements = statements
    }

    private static func text(_ utf8: [UInt8], from: Int, to: Int) -> String {
        String(decoding: utf8[from..<to], as: UTF8.self)
    }
}
