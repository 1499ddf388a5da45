import Foundation

/// One step of a schema bundle: `migrations/NNNN_<name>.sql`.
///
/// A migration is never modified once it has shipped: accountd records the
/// sha256 of its bytes in every account it is applied to, and reports an applied
/// migration whose file has changed since.
public struct Migration: Sendable, Identifiable {
    /// The version this step brings an account to (`NNNN`).
    public let version: Int
    /// The file name without `.sql`, e.g. `0003_add_sex`.
    public let name: String
    /// The path of the file, relative to the bundle folder, e.g. `migrations/0003_add_sex.sql`.
    public let relativePath: String
    /// SHA-256 of the file's bytes, lowercase hex.
    public let sha256: String
    /// The lowest bundle target that can still use a file at this version
    /// (`-- accountd: readable-by N`); the migration's own version without the directive.
    public let readableBy: Int
    /// `-- accountd: allow-foreign-key-violations`: a foreign-key violation left after this
    /// step is reported but does not fail the migration.
    public let allowsForeignKeyViolations: Bool
    /// The statements, with their lines.
    let script: SQLScript

    public var id: Int { version }

    /// Parses the name and directives of a migration file.
    ///
    /// - Throws: ``AccountdError`` (`invalidBundle`) for a bad file name, an unknown directive,
    ///   or a forbidden statement, naming the file and line.
    init(fileName: String, data: Data) throws {
        let relativePath = "migrations/" + fileName
        guard let parsed = Self.parse(fileName: fileName) else {
            throw AccountdError(
                .invalidBundle,
                "\(relativePath): a migration file is named NNNN_<name>.sql, with NNNN its version (0001, 0002, ...)",
                file: relativePath, line: 1)
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw AccountdError(.invalidBundle, "\(relativePath) is not valid UTF-8 text", file: relativePath)
        }
        self.version = parsed.version
        self.name = parsed.name
        self.relativePath = relativePath
        self.sha256 = Digest.sha256Hex(data)
        self.script = SQLScript(text)

        var readableBy = parsed.version
        var allowsViolations = false
        let lines = BundleText.lines(text)
        var headerEnd = lines.count
        for (offset, line) in lines.enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard trimmed.hasPrefix("--") else {
                headerEnd = offset
                break
            }
            let comment = trimmed.dropFirst(2).trimmingCharacters(in: .whitespaces)
            guard comment.lowercased().hasPrefix("accountd:") else { continue }
            let directive = comment.dropFirst("accountd:".count).trimmingCharacters(in: .whitespaces)
            let words = directive.split(separator: " ").map(String.init)
            switch words.first?.lowercased() {
            case "readable-by":
                guard words.count == 2, let value = Int(words[1]), value >= 1, value <= parsed.version else {
                    throw AccountdError(
                        .invalidBundle,
                        "\(relativePath) line \(offset + 1): 'readable-by' takes one version N with 1 ≤ N ≤ \(parsed.version), got '\(directive)'",
                        file: relativePath, line: offset + 1)
                }
                readableBy = value
            case "allow-foreign-key-violations":
                allowsViolations = true
            default:
                throw AccountdError(
                    .invalidBundle,
                    "\(relativePath) line \(offset + 1): unknown directive '\(directive)'; known: readable-by N, allow-foreign-key-violations",
                    file: relativePath, line: offset + 1)
            }
        }
        // A directive below the first statement would be silently ignored: surely a mistake.
        for offset in headerEnd..<lines.count where Self.isDirective(lines[offset]) {
            throw AccountdError(
                .invalidBundle,
                "\(relativePath) line \(offset + 1): an '-- accountd:' directive is read only in the comments at the top of the file, "
                    + "before the first statement; move it there (or reword the comment)",
                file: relativePath, line: offset + 1)
        }
        self.readableBy = readableBy
        self.allowsForeignKeyViolations = allowsViolations
        try Self.checkStatements(script, file: relativePath)
    }

    /// Whether `line` is a whole-line `-- accountd:` comment, in any case.
    static func isDirective(_ line: Substring) -> Bool {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("--") else { return false }
        return trimmed.dropFirst(2).trimmingCharacters(in: .whitespaces).lowercased().hasPrefix("accountd:")
    }

    /// `0012_add_index.sql` → (12, "0012_add_index"); nil when the name does not fit.
    static func parse(fileName: String) -> (version: Int, name: String)? {
        guard fileName.hasSuffix(".sql") else { return nil }
        let stem = String(fileName.dropLast(4))
        let digits = stem.prefix { $0.isASCII && $0.isNumber }
        guard digits.count >= 4, let version = Int(digits), version >= 1 else { return nil }
        let rest = stem.dropFirst(digits.count)
        guard rest.hasPrefix("_"), rest.count > 1 else { return nil }
        return (version, stem)
    }

    /// Whether a bundle may not change `name` (lowercased): the daemon's `accountd_*`
    /// records, Litestream's tables, and SQLite's own tables but `sqlite_sequence` and the
    /// `sqlite_stat*` tables, which SQLite lets any program change.
    static func isReserved(_ name: String) -> Bool {
        if name.hasPrefix("accountd_") || LitestreamTables.contains(name) { return true }
        return name.hasPrefix("sqlite_") && name != "sqlite_sequence" && !name.hasPrefix("sqlite_stat")
    }

    /// Refuses statements that a bundle file may not contain at top level.
    static func checkStatements(_ script: SQLScript, file: String) throws {
        for statement in script.statements {
            if let verb = statement.forbiddenVerb {
                throw AccountdError(
                    .invalidBundle,
                    "\(file) line \(statement.line): \(verb) is not allowed in a bundle file: accountd runs "
                        + "migrations inside one transaction of its own, and VACUUM, ATTACH and DETACH cannot run there; remove the statement",
                    file: file, line: statement.line)
            }
            if let pragma = statement.pragmaName, statement.pragmaAssigns,
                ["user_version", "application_id", "journal_mode", "writable_schema"].contains(pragma)
            {
                throw AccountdError(
                    .invalidBundle,
                    "\(file) line \(statement.line): PRAGMA \(pragma) may not be set by a bundle: accountd manages it; remove the statement",
                    file: file, line: statement.line)
            }
            if let object = statement.createdObject, object.name.hasPrefix("accountd_") || LitestreamTables.contains(object.name) {
                throw AccountdError(
                    .invalidBundle,
                    "\(file) line \(statement.line): \(object.kind) \(object.name): names beginning with accountd_ are reserved for the daemon's own records, "
                        + "and _litestream_seq and _litestream_lock are Litestream's; rename it",
                    file: file, line: statement.line)
            }
            if let reserved = statement.changedObjects.first(where: Self.isReserved) {
                throw AccountdError(
                    .invalidBundle,
                    "\(file) line \(statement.line): \(reserved) is not the bundle's: a bundle may not write, drop or alter accountd_* tables "
                        + "(the daemon's own records), Litestream's tables or SQLite's (but sqlite_sequence and sqlite_stat*), "
                        + "rename a table to such a name, nor hang an index or trigger on them; remove the statement",
                    file: file, line: statement.line)
            }
        }
    }
}
