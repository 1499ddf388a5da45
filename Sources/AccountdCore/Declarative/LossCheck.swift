import GRDB

/// Counts, in the current file and before anything is written, the rows that a change
/// of one table would lose or could not keep.
///
/// Each count is a plain `SELECT` over ``TableSource/projection``: the rows as the new
/// table would receive them. A constraint this check cannot count (a partial or expression
/// `UNIQUE` index) is still enforced by SQLite when the step runs, which rolls the whole
/// migration back.
struct LossCheck {
    var db: Database
    var directives: SchemaDirectives

    /// Rows of a table that is dropped.
    func droppedTable(_ name: String) throws -> [MigrationPlan.Loss] {
        let rows = try count("SELECT count(*) FROM \(DefinitionText.quote(name))")
        guard rows > 0 else { return [] }
        return [.init(text: "table \(name): dropping it loses its \(rows) row(s)", allowed: directives.allowsDrop(table: name.lowercased()))]
    }

    /// Values of columns the rebuild does not copy.
    func droppedColumns(_ source: TableSource) throws -> [MigrationPlan.Loss] {
        try source.droppedColumns.compactMap { column in
            let values = try count(
                "SELECT count(*) FROM \(DefinitionText.quote(source.currentName)) WHERE \(DefinitionText.quote(column.name)) IS NOT NULL")
            guard values > 0 else { return nil }
            let allowed = directives.allowsDrop(table: source.targetName.lowercased(), column: column.key)
                || directives.allowsDrop(table: source.currentName.lowercased(), column: column.key)
            return .init(text: "table \(source.targetName): column \(column.name) holds \(values) non-NULL value(s) that the new definition drops", allowed: allowed)
        }
    }

    /// Values that would not come through a rebuild unchanged because their column's declared
    /// type changes: the new column's affinity converts them (`'007'` into `7` under
    /// INTEGER, `' 42 '` into `42.0` under REAL, `12345678901234567890` into a rounded REAL,
    /// a number into text under TEXT). SQLite itself decides: every value goes into a
    /// column of the new type in a scratch database, and one whose storage class or bytes
    /// come back different is counted. A `STRICT` target refuses a value it cannot keep
    /// when the step runs, so it needs no count here.
    func convertedColumns(_ source: TableSource, strictTarget: Bool) throws -> [MigrationPlan.Loss] {
        guard !strictTarget else { return [] }
        var losses: [MigrationPlan.Loss] = []
        for column in source.targetColumns where column.hidden == 0 {
            guard let old = source.origin[column.key], old.type.lowercased() != column.type.lowercased() else { continue }
            let changed = try ConversionProbe.count(
                values: "SELECT \(DefinitionText.quote(old.name)) FROM \(DefinitionText.quote(source.currentName))", in: db, into: column.type)
            guard changed.count > 0 else { continue }
            let allowed = directives.allowsConversion(table: source.targetName.lowercased(), column: column.key)
            let typeText = old.type.isEmpty ? "no type" : old.type
            losses.append(
                .init(
                    text: "table \(source.targetName): column \(column.name) changes from \(typeText) to \(column.type.isEmpty ? "no type" : column.type), "
                        + "and \(changed.count) value(s) would not come through unchanged (e.g. \(changed.example))",
                    allowed: allowed))
        }
        return losses
    }

    /// Rows that would break a `NOT NULL`, `CHECK`, `UNIQUE` or foreign key the table did not have.
    ///
    /// - Parameters:
    ///   - old: the table as it is (after renames), for the constraints it already has.
    ///   - new: the table in the target.
    ///   - parents: the sources of the other kept tables, for new foreign keys.
    ///   - targetUniqueSets: the column sets the target table keeps unique.
    ///   - current: the current database after renames, for the unique sets it already enforces.
    func newConstraints(
        _ source: TableSource, old: NormalizedSchema.Table, new: NormalizedSchema.Table, parents: [String: TableSource],
        targetUniqueSets: Set<[String]>, current: Database
    ) throws -> [MigrationPlan.Loss] {
        var losses: [MigrationPlan.Loss] = []
        let rows = "(\(source.projection))"
        func refuse(_ text: String) { losses.append(.init(text: "table \(source.targetName): \(text)", allowed: false)) }
        for column in source.targetColumns where column.notNull && column.hidden == 0 && column.defaultValue == nil {
            if let origin = source.origin[column.key] {
                guard !origin.notNull else { continue }
                let nulls = try count("SELECT count(*) FROM \(rows) WHERE \(DefinitionText.quote(column.name)) IS NULL")
                if nulls > 0 { refuse("column \(column.name) becomes NOT NULL without a default, and \(nulls) row(s) hold NULL") }
            } else {
                let all = try count("SELECT count(*) FROM \(DefinitionText.quote(source.currentName))")
                if all > 0 { refuse("new column \(column.name) is NOT NULL without a default, and the table has \(all) row(s)") }
            }
        }
        for check in Set(new.checks).subtracting(old.checks).sorted() {
            // An expression this query cannot evaluate is left to SQLite when the step runs.
            guard let failing = try? count("SELECT count(*) FROM \(rows) WHERE NOT coalesce((\(check)), 1)"), failing > 0 else { continue }
            refuse("\(failing) row(s) fail the new CHECK (\(check))")
        }
        let existing = try Self.uniqueSets(current, table: source.targetName)
        for set in targetUniqueSets.sorted(by: { $0.joined() < $1.joined() }) where !existing.contains(set) {
            let names = set.map(DefinitionText.quote).joined(separator: ", ")
            let duplicated = try count(
                "SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM \(rows) WHERE "
                    + set.map { "\(DefinitionText.quote($0)) IS NOT NULL" }.joined(separator: " AND ")
                    + " GROUP BY \(names) HAVING count(*) > 1)")
            if duplicated > 0 { refuse("\(duplicated) row(s) share values of the new UNIQUE (\(set.joined(separator: ", ")))") }
        }
        for key in Set(new.foreignKeys).subtracting(old.foreignKeys).sorted() {
            let parent = parents[key.table]
            var parentColumns = key.targetColumns
            if parentColumns.contains("") {
                parentColumns = (parent?.targetColumns ?? []).filter { $0.primaryKey > 0 }.sorted { $0.primaryKey < $1.primaryKey }.map(\.key)
            }
            let present = key.columns.map { "c.\(DefinitionText.quote($0)) IS NOT NULL" }.joined(separator: " AND ")
            var sql = "SELECT count(*) FROM \(rows) AS c WHERE \(present)"
            if let parent, parentColumns.count == key.columns.count {
                let match = zip(key.columns, parentColumns).map { "p.\(DefinitionText.quote($1)) = c.\(DefinitionText.quote($0))" }
                sql += " AND NOT EXISTS (SELECT 1 FROM (\(parent.projection)) AS p WHERE \(match.joined(separator: " AND ")))"
            }
            guard let failing = try? count(sql), failing > 0 else { continue }
            losses.append(
                .init(
                    text: "table \(source.targetName): \(failing) row(s) fail the new foreign key \(key.description)",
                    allowed: directives.allowsForeignKeyViolations))
        }
        return losses
    }

    /// The column sets a table keeps unique: its primary key and every full, column-only unique index.
    static func uniqueSets(_ db: Database, table: String) throws -> Set<[String]> {
        var sets: Set<[String]> = []
        let primaryKey = try String.fetchAll(
            db, sql: "SELECT lower(name) FROM pragma_table_xinfo(?) WHERE pk > 0 ORDER BY pk", arguments: [table])
        if !primaryKey.isEmpty { sets.insert(primaryKey.sorted()) }
        for index in try String.fetchAll(
            db, sql: "SELECT name FROM pragma_index_list(?) WHERE \"unique\" = 1 AND partial = 0", arguments: [table])
        {
            let columns = try String?.fetchAll(db, sql: "SELECT lower(name) FROM pragma_index_info(?) ORDER BY seqno", arguments: [index])
            guard !columns.isEmpty, columns.allSatisfy({ $0 != nil }) else { continue }
            sets.insert(columns.compactMap { $0 }.sorted())
        }
        return sets
    }

    private func count(_ sql: String) throws -> Int {
        try Int.fetchOne(db, sql: sql) ?? 0
    }
}
