import Foundation
import GRDB

/// The `schema.sql` of a declarative bundle: the whole schema at version N, which every
/// older account is brought to by a computed ``MigrationPlan``.
///
/// Its first line is `-- accountd: declarative version N`; the bundle has no
/// `migrations/` folder. SQLite parses the statements: the target is what an empty
/// in-memory database holds after running them (``loadTarget()``).
public struct DeclarativeSchema: Sendable {
    /// The version N the first line declares: the bundle's target version.
    public let version: Int
    /// SHA-256 of the file's bytes.
    public let sha256: String
    /// The statements, without `CREATE TABLE sqlite_*` lines that `.schema` prints.
    let script: SQLScript
    /// The renames and allowed losses its comments declare.
    let directives: SchemaDirectives
    /// The schema as SQLite reads it, for the planner.
    let target: DeclarativeTarget

    /// Reads `schema.sql` as a declarative schema; nil when its first line does not declare one.
    ///
    /// - Throws: ``AccountdError`` (`invalidBundle`) for a malformed header or directive, or a
    ///   statement SQLite refuses, naming `schema.sql` and the line.
    /// `interrupt` stops `schema.sql` running on its empty database (a newer reload, SIGTERM, the time limit).
    static func read(text: String, data: Data, script: SQLScript, interrupt: SQLiteInterrupt = SQLiteInterrupt()) throws -> DeclarativeSchema? {
        let firstLine = BundleText.firstLine(text)
        guard let declared = SchemaDirectives.declaredVersion(firstLine: firstLine) else { return nil }
        guard let version = declared else {
            throw AccountdError(
                .invalidBundle, "schema.sql line 1: write the header as '-- accountd: declarative version N' with N ≥ 1",
                file: "schema.sql", line: 1)
        }
        let statements = SQLScript(statements: script.statements.filter { !($0.createdObject?.name.hasPrefix("sqlite_") ?? false) })
        let directives = try SchemaDirectives.read(text, script: script)
        let target: DeclarativeTarget
        do {
            let queue = try Self.load(statements, interrupt: interrupt)
            defer { try? queue.close() }
            target = try queue.read { try DeclarativeTarget.read($0) }
        } catch let error as ScriptRunner.Failure {
            if error.resultCode.primaryResultCode == .SQLITE_INTERRUPT, let limit = interrupt.timeLimit, interrupt.isPastDeadline {
                throw AccountdError.checkOverTime(at: error.location, limit: limit, file: error.file, line: error.line)
            }
            if error.resultCode.primaryResultCode == .SQLITE_INTERRUPT && interrupt.isStopped {
                throw AccountdError(
                    .interrupted, "the check of the bundle was stopped at \(error.location) (the daemon is stopping, or a newer reload superseded this one)",
                    file: error.file, line: error.line)
            }
            throw AccountdError(.invalidBundle, "\(error.location): \(error.sqliteMessage)", file: error.file, line: error.line)
        }
        return DeclarativeSchema(version: version, sha256: Digest.sha256Hex(data), script: statements, directives: directives, target: target)
    }

    /// A new in-memory database holding exactly this schema: the target the planner compares with.
    ///
    /// - Throws: ``ScriptRunner/Failure`` when SQLite refuses a statement.
    func loadTarget() throws -> DatabaseQueue {
        try Self.load(script)
    }

    private static func load(_ script: SQLScript, interrupt: SQLiteInterrupt = SQLiteInterrupt()) throws -> DatabaseQueue {
        let queue = try DatabaseQueue(configuration: Connections.configuration(foreignKeys: false, label: "declarative-target"))
        try queue.writeWithoutTransaction { db in try interrupt.run(on: db) { try ScriptRunner.run(script, file: "schema.sql", in: db) } }
        return queue
    }

    /// Checks that every `renamed-from` and `allow-drop` names something in the target.
    ///
    /// - Throws: ``AccountdError`` (`invalidBundle`) naming the directive.
    func checkDirectives(against target: NormalizedSchema) throws {
        for (table, _) in directives.tableRenames where target.tables[table] == nil {
            throw AccountdError(
                .invalidBundle, "schema.sql: 'renamed-from' on table \(table), which schema.sql does not create", file: "schema.sql")
        }
        for (table, columns) in directives.columnRenames {
            let names = Set(target.tables[table]?.columns.map(\.name) ?? [])
            for (column, old) in columns where !names.contains(column) {
                throw AccountdError(
                    .invalidBundle,
                    "schema.sql: 'renamed-from \(old)' is on a line of table \(table) that defines no column named \(column); put it on the column's own line",
                    file: "schema.sql")
            }
        }
    }
}
