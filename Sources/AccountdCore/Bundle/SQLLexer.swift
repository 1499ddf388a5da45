/// A small SQLite lexer: enough to split scripts into statements with line
/// numbers, find the leading keywords of a statement, and normalise SQL text for
/// schema comparison. It never executes or rewrites SQL.
struct SQLLexer {
    /// One token of SQL text.
    struct Token: Sendable {
        enum Kind: Sendable { case word, quotedIdentifier, string, blob, number, punctuation, variable }
        var kind: Kind
        /// The token exactly as written.
        var raw: Substring
        /// The 1-based line the token starts on.
        var line: Int
        /// Byte offsets of the token in the UTF-8 text.
        var start: Int
        var end: Int

        /// For a word or a quoted identifier: the identifier, unquoted and lowercased.
        /// For everything else: the raw text.
        var normalized: String {
            switch kind {
            case .word: return raw.lowercased()
            case .quotedIdentifier: return Self.unquote(raw).lowercased()
            case .punctuation, .number, .string, .blob, .variable: return String(raw)
            }
        }

        /// True for a bare word equal to `keyword` (case-insensitive).
        func isKeyword(_ keyword: String) -> Bool {
            kind == .word && raw.count == keyword.count && raw.lowercased() == keyword
        }

        /// True for a word or a quoted identifier, i.e. anything that can name an object.
        var isName: Bool { kind == .word || kind == .quotedIdentifier }

        /// True for what SQLite takes as the name of an object being created, which may
        /// also be a string literal (`CREATE TABLE 't' (...)`).
        var isCreatedName: Bool { isName || kind == .string }

        /// The name a token stands for, unquoted and lowercased, a string literal included.
        var nameValue: String {
            kind == .string ? String(raw.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'").lowercased() : normalized
        }

        static func unquote(_ raw: Substring) -> String {
            guard let first = raw.first, raw.count >= 2 else { return String(raw) }
            let inner = raw.dropFirst().dropLast()
            switch first {
            case "\"": return inner.replacingOccurrences(of: "\"\"", with: "\"")
            case "`": return inner.replacingOccurrences(of: "``", with: "`")
            case "[": return String(inner)
            default: return String(raw)
            }
        }
    }

    /// Splits `text` into tokens, dropping white space and comments.
    ///
    /// Unterminated strings, identifiers and comments run to the end of the text;
    /// SQLite reports those when the statement is executed.
    static func tokens(_ text: String) -> [Token] {
        var scanner = Scanner(text)
        var tokens: [Token] = []
        while let token = scanner.next() { tokens.append(token) }
        return tokens
    }

    /// Reads tokens off SQL text one at a time, in the order ``next()``'s steps try them.
    private struct Scanner {
        let text: String
        let utf8: [UInt8]
        /// The byte read next, and the line it is on.
        var i = 0
        var line = 1

        init(_ text: String) {
            self.text = text
            utf8 = Array(text.utf8)
        }

        var count: Int { utf8.count }

        /// Whether the bytes from `i` are `first` then `second`.
        func at(_ first: UInt8, then second: UInt8) -> Bool {
            i + 1 < count && utf8[i] == first && utf8[i + 1] == second
        }

        /// The next token, or nil at the end of the text: white space and comments are
        /// skipped first, then the token is scanned by its first bytes.
        mutating func next() -> Token? {
            skipSpaceAndComments()
            guard i < count else { return nil }
            let (start, startLine) = (i, line)
            let kind = scanToken()
            return Token(kind: kind, raw: substring(start, i), line: startLine, start: start, end: i)
        }

        /// Skips white space, newlines (counting them), `--` comments and `/* */` comments.
        mutating func skipSpaceAndComments() {
            while i < count {
                switch utf8[i] {
                case 0x0A:
                    line += 1
                    i += 1
                case 0x20, 0x09, 0x0D, 0x0C, 0x0B:
                    i += 1
                case 0x2D where at(0x2D, then: 0x2D):  // -- comment
                    while i < count && utf8[i] != 0x0A { i += 1 }
                case 0x2F where at(0x2F, then: 0x2A):  // /* comment */
                    i += 2
                    while i < count && !(utf8[i] == 0x2A && i + 1 < count && utf8[i + 1] == 0x2F) {
                        if utf8[i] == 0x0A { line += 1 }
                        i += 1
                    }
                    i = min(i + 2, count)
                default:
                    return
                }
            }
        }

        /// Scans the token that starts at `i`, and says its kind.
        mutating func scanToken() -> Token.Kind {
            let c = utf8[i]
            switch c {
            case 0x27, 0x22, 0x60:  // ' " `
                scanQuoted(c)
                return c == 0x27 ? .string : .quotedIdentifier
            case 0x5B:  // [identifier]
                scanBracketed()
                return .quotedIdentifier
            case 0x78 where at(0x78, then: 0x27), 0x58 where at(0x58, then: 0x27):  // x'blob'
                scanBlob()
                return .blob
            case 0x30...0x39,  // 1
                0x2E where i + 1 < count && utf8[i + 1] >= 0x30 && utf8[i + 1] <= 0x39:  // .5, not a lone dot
                i = SQLLexer.numberEnd(utf8, from: i)
                return .number
            case _ where SQLLexer.isIdentifierByte(c):
                skipIdentifierBytes()
                return .word
            case 0x3F, 0x3A, 0x40:  // ? :name @name
                i += 1
                skipIdentifierBytes()
                return .variable
            default:
                scanPunctuation(c)
                return .punctuation
            }
        }

        /// A string or quoted identifier; a doubled quote stays inside it.
        mutating func scanQuoted(_ quote: UInt8) {
            i += 1
            while i < count {
                if utf8[i] == quote {
                    if i + 1 < count && utf8[i + 1] == quote {
                        i += 2
                        continue
                    }
                    i += 1
                    return
                }
                if utf8[i] == 0x0A { line += 1 }
                i += 1
            }
        }

        mutating func scanBracketed() {
            i += 1
            while i < count && utf8[i] != 0x5D {
                if utf8[i] == 0x0A { line += 1 }
                i += 1
            }
            i = min(i + 1, count)
        }

        mutating func scanBlob() {
            i += 2
            while i < count && utf8[i] != 0x27 { i += 1 }
            i = min(i + 1, count)
        }

        mutating func skipIdentifierBytes() {
            while i < count && SQLLexer.isIdentifierByte(utf8[i]) { i += 1 }
        }

        /// One operator or punctuation mark: `||`, `<=`, `>=`, `==`, `!=`, `<>`, `<<`, `>>`,
        /// `->` and `->>` are one token each. A lone byte of a multi-byte character cannot
        /// start here: those bytes are >= 0x80 and were taken as identifier bytes.
        mutating func scanPunctuation(_ c: UInt8) {
            var length = 1
            if i + 1 < count {
                switch (c, utf8[i + 1]) {
                case (0x7C, 0x7C), (0x3C, 0x3D), (0x3E, 0x3D), (0x3D, 0x3D), (0x21, 0x3D), (0x3C, 0x3E),
                    (0x3C, 0x3C), (0x3E, 0x3E):
                    length = 2
                case (0x2D, 0x3E):
                    length = (i + 2 < count && utf8[i + 2] == 0x3E) ? 3 : 2
                default: break
                }
            }
            i += length
        }

        func substring(_ from: Int, _ to: Int) -> Substring {
            let start = text.utf8.index(text.utf8.startIndex, offsetBy: from)
            let end = text.utf8.index(start, offsetBy: to - from)
            return text[start..<end]
        }
    }

    /// Where the number starting at `start` ends, read as SQLite's tokenizer reads it: a
    /// hex literal `0x...` is hex digits only (so `0xFE-- note` is `0xFE` and a comment),
    /// and a decimal is digits, a point, digits, then an exponent whose sign follows the
    /// `e` directly. Identifier bytes right after a number stay in its token, as SQLite
    /// makes that one illegal token.
    private static func isIdentifierByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F
            || c == 0x24 || c >= 0x80
    }

    private static func numberEnd(_ utf8: [UInt8], from start: Int) -> Int {
        let count = utf8.count
        func isDigit(_ i: Int) -> Bool { i < count && utf8[i] >= 0x30 && utf8[i] <= 0x39 }
        func isHexDigit(_ i: Int) -> Bool {
            i < count && (isDigit(i) || (utf8[i] | 0x20 >= 0x61 && utf8[i] | 0x20 <= 0x66))
        }
        var i = start
        if utf8[i] == 0x30, i + 1 < count, utf8[i + 1] | 0x20 == 0x78, isHexDigit(i + 2) {
            i += 2
            while isHexDigit(i) { i += 1 }
        } else {
            while isDigit(i) { i += 1 }
            if i < count, utf8[i] == 0x2E {
                i += 1
                while isDigit(i) { i += 1 }
            }
            if i < count, utf8[i] | 0x20 == 0x65,
                isDigit(i + 1) || (i + 2 < count && (utf8[i + 1] == 0x2B || utf8[i + 1] == 0x2D) && isDigit(i + 2))
            {
                i += 2
                while isDigit(i) { i += 1 }
            }
        }
        while i < count && isIdentifierByte(utf8[i]) { i += 1 }
        return i
    }

    /// SQL text in a canonical form: comments and layout dropped, keywords and
    /// identifiers lowercased and unquoted, `IF NOT EXISTS` removed, literals kept.
    ///
    /// Two statements that differ only in those respects normalise to the same string.
    ///
    /// A double-quoted token is SQLite's string literal whenever no column of that name is in
    /// scope (`DEFAULT "Pending"`, `VALUES("Created")`), so its case matters: it is kept exactly
    /// as written unless its lowercased text is in `identifiers`, the names of the schema's
    /// objects and columns, which are compared without case. Backquoted and bracketed tokens
    /// are always identifiers.
    static func normalize(_ text: String, identifiers: Set<String> = []) -> String {
        normalize(tokens(text)[...], identifiers: identifiers)
    }

    /// ``normalize(_:identifiers:)`` of tokens already split.
    static func normalize(_ tokens: ArraySlice<Token>, identifiers: Set<String> = []) -> String {
        var parts: [String] = []
        parts.reserveCapacity(tokens.count)
        var index = tokens.startIndex
        while index < tokens.endIndex {
            let token = tokens[index]
            if token.isKeyword("if"), index + 2 < tokens.endIndex, tokens[index + 1].isKeyword("not"),
                tokens[index + 2].isKeyword("exists")
            {
                index += 3
                continue
            }
            parts.append(quoteIfNeeded(token, identifiers: identifiers))
            index += 1
        }
        return parts.joined(separator: " ")
    }

    private static func quoteIfNeeded(_ token: Token, identifiers: Set<String>) -> String {
        guard token.kind == .quotedIdentifier else { return token.normalized }
        let name = token.normalized
        if token.raw.first == "\"", !identifiers.contains(name) { return String(token.raw) }
        let plain = !name.isEmpty && name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c >= 0x80
        } && !(name.utf8.first! >= 0x30 && name.utf8.first! <= 0x39)
        return plain ? name : "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
