import Foundation

/// Test support: a seeded generator of schema histories, so that the migrator meets more
/// shapes of history than the sample bundle has, on a plain clone too.
///
/// A history is a list of migrations, each one to three operations of these kinds (see
/// ``Operation``): tables created (some with foreign keys, CHECK lists, UNIQUE columns,
/// AUTOINCREMENT, or as `WITHOUT ROWID` link tables), columns added (some backfilled),
/// dropped and renamed, tables renamed, dropped, and rebuilt by SQLite's 12-step recipe
/// (new table, copy, drop, rename, then the indexes, triggers and views again), indexes
/// (partial, on expressions, descending), views (also over joins), triggers (an audit
/// log, a counter on the parent row, and the triggers that keep virtual tables in step),
/// virtual tables (FTS5 external-content, contentless, `tokenize="trigram"`, FTS4 and
/// R*Tree, each filled from an ordinary table), and rows inserted, updated and deleted.
///
/// The histories are valid by construction: the generator keeps a ``HistoryModel`` of the
/// schema and only chooses what SQLite accepts on any rows that honour the constraints
/// (an index, view or trigger that uses a column or table about to go is dropped first;
/// a table that others reference is never dropped, nor rows deleted from it; columns an
/// external-content FTS table reads keep their names and values). The same seed gives the
/// same history, byte for byte.
public struct HistoryGenerator {
    /// One migration of a generated history.
    public struct Step: Sendable {
        /// The part of the file name after `NNNN_`.
        public var name: String
        /// The statements, each ending with `;`.
        public var sql: String
        /// The operations the step performs, for coverage checks.
        public var operations: [Operation]
    }

    /// What a step does.
    public enum Operation: String, CaseIterable, Sendable {
        case createTable, createLinkTable, addColumn, dropColumn, renameColumn, renameTable, rebuildTable, dropTable
        case createIndex, createView, createJoinView, createAuditTrigger, createCounterTrigger, dropObject
        case createFTS5External, createFTS5Contentless, createFTS5Trigram, createFTS4, createRTree, optimizeIndex
        case insertRows, updateRows, deleteRows
    }

    /// The history of `steps` migrations for `seed`.
    public static func history(seed: UInt64, steps: Int) -> [Step] {
        var generator = HistoryGenerator(seed: seed)
        return (1...steps).map { generator.step($0) }
    }

    /// Writes `history` as a schema bundle (`migrations/NNNN_name.sql`) at `path` and returns `path`.
    @discardableResult
    public static func write(_ history: [Step], at path: String) throws -> String {
        try BundleFixture.write(at: path, steps: history.map { $0.sql + "\n" }, names: history.map(\.name))
    }

    /// The schema as the steps written so far leave it.
    var model = HistoryModel()
    /// The only source of choices, so a seed decides everything.
    var random: SeededRandom
    /// The version being written, for literals that differ from one step to the next.
    var version = 0
    /// The statements of the step being written.
    var statements: [String] = []
    /// The operations of the step being written.
    var operations: [Operation] = []
    /// The operations of the steps written so far.
    var used: Set<Operation> = []
    /// Rows inserted by the history so far, which makes each literal row distinct.
    var rowsInserted = 0

    /// A generator whose every choice follows from `seed`.
    init(seed: UInt64) { random = SeededRandom(seed: seed &* 0x9E37_79B9 &+ 0xACC0) }

    /// Table names, columns names and words for text values: none is an SQL keyword.
    static let tableWords = ["author", "book", "shelf", "reader", "loan", "review", "place", "trip", "photo", "album",
                             "track", "artist", "recipe", "pantry", "device", "sensor", "invoice", "client", "project", "task"]
    static let columnWords = ["title", "body", "rating", "pages", "price", "note", "status", "color", "weight", "score",
                              "summary", "nickname", "city", "country", "born", "width", "height", "caption", "phone", "email",
                              "code", "volume", "tempo", "remark", "flavor", "mood"]
    static let textWords = ["apple", "river", "stone", "cloud", "maple", "ember", "harbor", "violet", "quartz", "meadow"]

    /// Writes migration `version`: tables to start with, then one to three operations.
    mutating func step(_ version: Int) -> Step {
        self.version = version
        statements = []
        operations = []
        if version == 1 {
            for _ in 0..<(2 + random.below(2)) { perform(.createTable) }
        } else {
            for _ in 0..<(1 + random.below(3)) { perform(chooseOperation()) }
        }
        used.formUnion(operations)
        let first = operations.first!.rawValue
        let name = first.replacingOccurrences(of: "([a-z])([A-Z])", with: "$1_$2", options: .regularExpression).lowercased()
        return Step(name: name, sql: statements.map { $0 + ";" }.joined(separator: "\n"), operations: operations)
    }

    // MARK: - Choosing

    /// Rowid tables with an `INTEGER PRIMARY KEY`.
    var plainTables: [HistoryModel.Table] { model.tables.filter(\.isPlain) }
    /// Every table that is not virtual.
    var ordinaryTables: [HistoryModel.Table] { model.tables.filter { !$0.isVirtual } }
    /// The virtual tables.
    var virtualTables: [HistoryModel.Table] { model.tables.filter(\.isVirtual) }

    /// Plain tables with a text column that is not the key, for full-text indexes.
    var textSources: [HistoryModel.Table] {
        plainTables.filter { table in table.columns.contains { !$0.isKey && $0.kind == .text && $0.reference == nil } }
    }

    /// A weighted random operation; now and then one the history has not used yet.
    mutating func chooseOperation() -> Operation {
        var weighted: [(Operation, Int)] = [
            (.createTable, plainTables.count < 6 ? 3 : 1), (.addColumn, 5), (.dropColumn, 3), (.renameColumn, 3),
            (.renameTable, 2), (.rebuildTable, 5), (.dropTable, 1), (.createIndex, 3), (.createView, 2),
            (.createAuditTrigger, 2), (.dropObject, 2), (.insertRows, 3), (.updateRows, 3), (.deleteRows, 2),
            (.createLinkTable, 1), (.createJoinView, 1), (.createCounterTrigger, 1),
        ]
        if !textSources.isEmpty {
            weighted += [(.createFTS5External, 1), (.createFTS5Contentless, 1), (.createFTS5Trigram, 1), (.createFTS4, 1)]
        }
        weighted += [(.createRTree, 1)]
        if !virtualTables.isEmpty { weighted.append((.optimizeIndex, 1)) }
        // Now and then an operation this history has not used yet, so each one covers much.
        let unused = weighted.map(\.0).filter { !used.contains($0) }
        if !unused.isEmpty && random.chance(35) { return random.pick(unused) }
        let total = weighted.reduce(0) { $0 + $1.1 }
        var pick = random.below(total)
        for (operation, weight) in weighted {
            if pick < weight { return operation }
            pick -= weight
        }
        return .createTable
    }

    /// Performs `operation`, or an operation that always applies (a new table) when it cannot.
    mutating func perform(_ operation: Operation) {
        let done: Bool
        switch operation {
        case .createTable: createTable(); done = true
        case .createLinkTable: done = createLinkTable()
        case .addColumn: done = addColumn()
        case .dropColumn: done = dropColumn()
        case .renameColumn: done = renameColumn()
        case .renameTable: done = renameTable()
        case .rebuildTable: done = rebuildTable()
        case .dropTable: done = dropTable()
        case .createIndex: done = createIndex()
        case .createView: done = createView()
        case .createJoinView: done = createJoinView()
        case .createAuditTrigger: done = createAuditTrigger()
        case .createCounterTrigger: done = createCounterTrigger()
        case .dropObject: done = dropObject()
        case .createFTS5External: done = createVirtual(.fts5External(content: 0))
        case .createFTS5Contentless: done = createVirtual(.fts5Contentless)
        case .createFTS5Trigram: done = createVirtual(.fts5Trigram(contentless: random.chance(50)))
        case .createFTS4: done = createVirtual(.fts4)
        case .createRTree: done = createVirtual(.rtree)
        case .optimizeIndex: done = optimizeIndex()
        case .insertRows: done = insertRows()
        case .updateRows: done = updateRows()
        case .deleteRows: done = deleteRows()
        }
        if done {
            operations.append(operation)
        } else {
            createTable()
            operations.append(.createTable)
        }
    }

    // MARK: - Names and values

    /// `base`, or `base2`, `base3`...: a name no table, index, view, trigger or shadow table has.
    mutating func freshName(_ base: String) -> String {
        let used = model.usedNames
        if !used.contains(base.lowercased()) { return base }
        var n = 2
        while used.contains("\(base)\(n)".lowercased()) { n += 1 }
        return "\(base)\(n)"
    }

    /// A column name `table` does not have yet.
    mutating func freshColumnName(in table: HistoryModel.Table, _ base: String? = nil) -> String {
        let base = base ?? random.pick(Self.columnWords)
        let used = Set(table.columns.map { $0.name.lowercased() })
        if !used.contains(base) { return base }
        var n = 2
        while used.contains("\(base)\(n)") { n += 1 }
        return "\(base)\(n)"
    }

    /// A declared type with the affinity of `kind`, in one of its common spellings.
    mutating func declaredType(_ kind: HistoryModel.Kind) -> String {
        switch kind {
        case .text: random.pick(["TEXT", "TEXT", "VARCHAR(40)", "CLOB"])
        case .integer: random.pick(["INTEGER", "INTEGER", "INT", "BIGINT"])
        case .real: random.pick(["REAL", "DOUBLE", "FLOAT"])
        case .blob: random.pick(["BLOB", ""])
        case .boolean: "BOOLEAN"
        case .date: random.pick(["DATETIME", "DATE"])
        }
    }

    /// A constant `DEFAULT` for `kind`, as `ALTER TABLE ADD COLUMN` accepts it.
    static func defaultSQL(_ kind: HistoryModel.Kind) -> String {
        switch kind {
        case .text: "'none'"
        case .integer: "0"
        case .real: "0.0"
        case .blob: "x''"
        case .boolean: "(0)"
        case .date: "'1970-01-01'"
        }
    }

    /// A literal for the `n`th row the history inserts; unique within the history for text and numbers.
    mutating func literal(_ column: HistoryModel.Column, row n: Int) -> String {
        if let allowed = column.allowed { return "'\(allowed[(n + version) % allowed.count])'" }
        if let parent = column.reference {
            let target = model.table(parent)
            return "(SELECT min(\(target.key!.name)) FROM \(target.name))"
        }
        switch column.kind {
        case .text: return "'\(random.pick(Self.textWords)) \(random.pick(Self.textWords)) v\(version)r\(n)'"
        case .integer: return "\(900_000 + n)"
        case .real: return "\(version).\(n)5"
        case .blob: return "x'\(String(format: "%02x%02x", version % 256, n % 256))'"
        case .boolean: return "\(n % 2)"
        case .date: return "'20\(10 + version % 15)-0\(1 + n % 9)-1\(n % 10)'"
        }
    }

    /// A value computed from the row's key, for backfilling a new column; unique per row.
    static func backfill(_ column: HistoryModel.Column, key: String, model: HistoryModel) -> String {
        if let allowed = column.allowed { return "'\(allowed[0])'" }
        if let parent = column.reference {
            let target = model.table(parent)
            return "(SELECT min(\(target.key!.name)) FROM \(target.name))"
        }
        switch column.kind {
        case .text: return "'item ' || \(key)"
        case .integer: return "\(key) * 3"
        case .real: return "\(key) / 4.0"
        case .blob: return "zeroblob(2)"
        case .boolean: return "\(key) % 2"
        case .date: return "date('2020-01-01', '+' || \(key) || ' days')"
        }
    }

    /// A nullable column without constraints, with a fresh id and name.
    mutating func newColumn(in table: HistoryModel.Table, kind: HistoryModel.Kind? = nil) -> HistoryModel.Column {
        let kind = kind ?? random.pick(HistoryModel.Kind.allCases)
        return HistoryModel.Column(id: model.newID(), name: freshColumnName(in: table), kind: kind, declaredType: declaredType(kind))
    }

    /// Appends a statement to the step being written.
    mutating func emit(_ sql: String) { statements.append(sql) }
}
