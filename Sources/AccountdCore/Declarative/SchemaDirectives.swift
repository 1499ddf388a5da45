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
    /// `table` or `table.column`, lowercased: the losses the bundle accepts.
    var allowedDrops: Set<String> = []

    /// `table.column`, lowercased: the columns whose values the bundle accepts seeing
    /// converted by a new declared type (`allow-convert`).
    var allowedConversions: Set<String> = []
    /// `allow-foreign-key-violations`: rows that break a foreign key after the plan are
    /// reported, and do not fail the migration.
    var allowsForeignKeyViolations = false

    /// Whether the bundle accepts that `column` of `table` changes values under its new type.
    func allowsConversion(table: String, column: String) -> Bool {
        allowedConversions.contains("\(table).\(column)")
    }

    /// Whether the bundle accepts dropping `table` (with its rows), or `column` of it.
    func allowsDrop(table: String, column: String? = nil) -> Bool {
        allowedDrops.contains(column.map { "\(table).\($0)" } ?? table)
    }

    /// Reads the directives of `text`, attaching each `renamed-from` to the table or column
    /// whose line carries it.
    ///
    /// A `renamed-from` on the line where a `CREATE TABLE` statement starts renames the
    /// table; on a later line of the statement, it renames the column whose definition
    /// begins on that line. Only comments are read: the statements themselves are parsed
    /// by SQLite.
    ///
    /// - Throws: ``AccountdError`` (`invalidBundle`) naming `schema.sql` and the line, for an
    ///   unknown directive or a `renamed-from` that is not on a table or column line.
    static func read(_ text: String, script: SQLScript) throws -> SchemaDirectives {
        var directives = SchemaDirectives()
        let lines = BundleText.lines(text)
        for (offset, line) in lines.enumerated() where offset > 0 {
            guard let range = line.range(of: "-- accountd:") ?? line.range(of: "--accountd:") else { continue }
            let lineNumber = offset + 1
            let words = line[range.upperBound...].split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
                .map { $0.lowercased() }
            func refuse(_ why: String) -> AccountdError {
                AccountdError(
                    .invalidBundle, "schema.sql line \(lineNumber): \(why)", file: "schema.sql", line: lineNumber)
            }
            switch words.first {
            case "allow-drop":
                guard words.count == 2 else { throw refuse("'allow-drop' takes one TABLE or TABLE.COLUMN") }
                directives.allowedDrops.insert(Self.unquote(words[1]))
            case "allow-convert":
                guard words.count == 2, words[1].contains(".") else { throw refuse("'allow-convert' takes one TABLE.COLUMN") }
                directives.allowedConversions.insert(Self.unquote(words[1]))
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

    private static func unquote(_ name: String) -> String {
        guard let first = name.first, "\"`[".contains(first), name.count >= 2 else { return name }
        return String(name.dropFirst().dropLast())
    }
}
