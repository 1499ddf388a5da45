import Foundation

/// The `-- accountd:` comments of a declarative `schema.sql`: what the planner may not guess.
///
/// Renames are never inferred from similar shapes, because a wrong guess moves data
/// into the wrong column; a table or column line says where it came from instead.
/// Losses are never silent either; `allow-drop` and `allow-convert` name each one the app
/// accepts.
///
/// ```sql
/// -- accountd: declarative version 7
/// -- accountd: allow-drop old_cache
/// CREATE TABLE person ( -- accountd: renamed-from people
///   id INTEGER PRIMARY KEY,
///   nickname TEXT -- accountd: renamed-from nick
/// );
/// ```
struct SchemaDirectives: Sendable, Hashable {
    /// New table name to the name it had before, lowercased.
    var tableRenames: [String: String] = [:]
    /// Table (new name) to new column name to the column's old name, lowercased.
    var columnRenames: [String: [String: String]] = [:]
    /// New index name to the name it had before, lowercased. Planned as a drop and a create.
    var indexRenames: [String: String] = [:]
    /// Tables, lowercased, whose drop the bundle accepts (`allow-drop TABLE`).
    var allowedTableDrops: Set<String> = []
    /// Columns, as lowercased ``Qualified`` names, whose drop the bundle accepts (`allow-drop TABLE.COLUMN`).
    var allowedColumnDrops: Set<Qualified> = []

    /// The columns, lowercased, whose values the bundle accepts seeing converted by a new
    /// declared type (`allow-convert`).
    var allowedConversions: Set<Qualified> = []

    /// A column of a table, both lowercased and unquoted.
    struct Qualified: Sendable, Hashable {
        var table: String
        var column: String
    }
    /// `allow-foreign-key-violations`: rows that break a foreign key after the plan are
    /// reported, and do not fail the migration.
    var allowsForeignKeyViolations = false

    /// Whether the bundle accepts that `column` of `table` changes values under its new type.
    func allowsConversion(table: String, column: String) -> Bool {
        allowedConversions.contains(Qualified(table: table, column: column))
    }

    /// Whether the bundle accepts dropping `table` (with its rows), or `column` of it.
    func allowsDrop(table: String, column: String? = nil) -> Bool {
        guard let column else { return allowedTableDrops.contains(table) }
        return allowedColumnDrops.contains(Qualified(table: table, column: column))
    }

    /// Reads the directives of `text`, attaching each `renamed-from` to the table or column
    /// whose line carries it.
    ///
    /// A `renamed-from` on the line where a `CREATE TABLE` statement starts renames the
    /// table; on a later line of the statement, it renames the column whose definition
    /// begins on that line. Only comments are read: the statements themselves are parsed
    /// by SQLite: a `-- accountd:` that lies inside a token of the script (a string literal,
    /// a quoted identifier) is text, not a directive.
    ///
    /// - Throws: ``AccountdError`` (`invalidBundle`) naming `schema.sql` and the line, for an
    ///   unknown directive or a `renamed-from` that is not on a table or column line.
    static func read(_ text: String, script: SQLScript) throws -> SchemaDirectives {
        var directives = SchemaDirectives()
        let lines = BundleText.lines(text)
        let tokens = SQLLexer.tokens(text)
        for (offset, line) in lines.enumerated() where offset > 0 {
            guard let range = Self.commentDirective(in: line, of: text, tokens: tokens) else { continue }
            let lineNumber = offset + 1
            let words = line[range.upperBound...].split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
                .map { $0.lowercased() }
            func refuse(_ why: String) -> AccountdError {
                AccountdError(
                    .invalidBundle, "schema.sql line \(lineNumber): \(why)", file: "schema.sql", line: lineNumber)
            }
            switch words.first {
            case "allow-drop":
                guard words.count == 2, let name = Self.qualifiedName(words[1]) else {
                    throw refuse("'allow-drop' takes one TABLE or TABLE.COLUMN (quote a table whose name holds a dot: \"a.b\")")
                }
                if let column = name.column {
                    directives.allowedColumnDrops.insert(Qualified(table: name.table, column: column))
                } else {
                    directives.allowedTableDrops.insert(name.table)
                }
            case "allow-convert":
                guard words.count == 2, let name = Self.qualifiedName(words[1]), let column = name.column else {
                    throw refuse("'allow-convert' takes one TABLE.COLUMN")
                }
                directives.allowedConversions.insert(Qualified(table: name.table, column: column))
            case "allow-foreign-key-violations":
                guard words.count == 1 else { throw refuse("'allow-foreign-key-violations' takes nothing") }
                directives.allowsForeignKeyViolations = true
            case "renamed-from":
                guard words.count == 2 else { throw refuse("'renamed-from' takes one old name") }
                let old = Self.unquote(words[1])
                guard let statement = script.statements.last(where: { $0.line <= lineNumber }),
                    let last = statement.tokens.last, last.line >= lineNumber,
                    let object = statement.createdObject, object.kind == "table" || object.kind == "index"
                else {
                    throw refuse("'renamed-from' belongs on the line of a CREATE TABLE or CREATE INDEX statement, or of a table's column")
                }
                if object.kind == "index" {
                    // An index holds no data of its own: the plan drops the old one and makes the new one.
                    guard statement.line == lineNumber else { throw refuse("'renamed-from' belongs on the line where CREATE INDEX begins") }
                    directives.indexRenames[object.name] = old
                } else if statement.line == lineNumber {
                    directives.tableRenames[object.name] = old
                } else if let column = statement.tokens.first(where: { $0.line == lineNumber && $0.isName }) {
                    directives.columnRenames[object.name, default: [:]][column.normalized] = old
                } else {
                    throw refuse("'renamed-from' must share its line with the column it renames")
                }
            case "declarative":
                throw refuse("'declarative version N' belongs on the first line only")
            default:
                throw refuse(
                    "unknown directive '\(words.joined(separator: " "))'; a declarative schema.sql knows renamed-from OLD, allow-drop TABLE[.COLUMN], "
                        + "allow-convert TABLE.COLUMN and allow-foreign-key-violations")
            }
        }
        return directives
    }

    /// The version N of a first line `-- accountd: declarative version N`, nil for any other first line.
    static func declaredVersion(firstLine: Substring) -> Int?? {
        let trimmed = firstLine.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("--") else { return nil }
        let words = trimmed.dropFirst(2).split(separator: " ").map { $0.lowercased() }
        guard words.count >= 2, words[0] == "accountd:", words[1] == "declarative" else { return nil }
        guard words.count == 4, words[2] == "version", let version = Int(words[3]), version >= 1 else { return .some(nil) }
        return .some(version)
    }

    /// The range of the first `-- accountd:` of `line` (a slice of `text`) that SQLite reads
    /// as a comment: outside every token of the script. Nil when there is none.
    private static func commentDirective(in line: Substring, of text: String, tokens: [SQLLexer.Token]) -> Range<String.Index>? {
        var from = line.startIndex
        while from < line.endIndex,
            let range = line[from...].range(of: "-- accountd:") ?? line[from...].range(of: "--accountd:")
        {
            let byte = text.utf8.distance(from: text.utf8.startIndex, to: range.lowerBound)
            if !tokens.contains(where: { $0.start <= byte && byte < $0.end }) { return range }
            from = range.upperBound
        }
        return nil
    }

    /// `TABLE` or `TABLE.COLUMN`, each part bare or quoted (`"a.b"`, `[a.b]`, `` `a.b` ``):
    /// a dot outside quotes separates the table from the column, so a table whose name holds
    /// a dot must be quoted. Nil when the text is not one of these forms.
    static func qualifiedName(_ text: String) -> (table: String, column: String?)? {
        var parts: [String] = []
        var rest = Substring(text)
        while true {
            guard let first = rest.first else { return nil }
            let close: Character? = first == "\"" ? "\"" : first == "`" ? "`" : first == "[" ? "]" : nil
            var part = ""
            if let close {
                var index = rest.index(after: rest.startIndex)
                var closed = false
                while index < rest.endIndex {
                    let character = rest[index]
                    index = rest.index(after: index)
                    if character == close {
                        // A doubled quote inside "..." or `...` stands for one.
                        if close != "]", index < rest.endIndex, rest[index] == close {
                            part.append(close)
                            index = rest.index(after: index)
                            continue
                        }
                        closed = true
                        break
                    }
                    part.append(character)
                }
                guard closed else { return nil }
                rest = rest[index...]
            } else {
                let end = rest.firstIndex(of: ".") ?? rest.endIndex
                part = String(rest[..<end])
                rest = rest[end...]
            }
            guard !part.isEmpty else { return nil }
            parts.append(part)
            if rest.isEmpty { break }
            guard rest.first == ".", parts.count == 1 else { return nil }
            rest = rest.dropFirst()
        }
        return (parts[0], parts.count > 1 ? parts[1] : nil)
    }

    private static func unquote(_ name: String) -> String {
        guard let first = name.first, "\"`[".contains(first), name.count >= 2 else { return name }
        return String(name.dropFirst().dropLast())
    }
}
