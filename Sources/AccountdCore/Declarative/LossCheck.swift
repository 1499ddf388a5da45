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
            let why = source.becomesGenerated(column) ? " (it becomes a generated column, whose values are computed)" : ""
            return .init(
                text: "table \(source.targetName): column \(column.name) holds \(values) non-NULL value(s) that the new definition drops\(why)",
                allowed: allowed)
        }
    }

    /// Values that would not come through a rebuild unchanged because their column's declared
    /// type changes: the new column's affinity converts them (`'007'` into `7` under
    /// INTEGER, `' 42 '` into `42.0` under REAL, `12345678901234567890` into a rounded REAL,
    /// a number into text under TEXT). SQLite itself decides: every value goes into a
    /// column of the new type in a scratch database, and one whose storage class or bytes
    /// come back different is counted. A `STRICT` target converts too (`'007'` into `7`
    /// under INTEGER, `7` into `'7'` under TEXT, `3.0` into `3`): the probe is `STRICT`
    /// then, and counts the values a `STRICT` column refuses as well. A table that becomes
    /// `STRICT` is probed even where a column's declared type stays the same.
    func convertedColumns(_ source: TableSource, strictTarget: Bool, strictSource: Bool) throws -> [MigrationPlan.Loss] {
        var losses: [MigrationPlan.Loss] = []
        for column in source.targetColumns where column.hidden == 0 {
            guard let old = source.origin[column.key], old.hidden == 0,
                old.type.lowercased() != column.type.lowercased() || (strictTarget && !strictSource)
            else { continue }
            let changed = try ConversionProbe.count(
                values: "SELECT \(DefinitionText.quote(old.name)) FROM \(DefinitionText.quote(source.currentName))", in: db, into: column.type,
                strict: strictTarget)
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

    /// Rows whose rowid a rebuild would not keep: rows with a NULL key when a column becomes the
    /// rowid (`INT PRIMARY KEY` to `INTEGER PRIMARY KEY`: SQLite gives such a row a new number),
    /// and every row when columns named `rowid`, `oid` and `_rowid_` leave no name to copy
    /// the rowid by. `allow-convert TABLE.COLUMN` (the key, or `TABLE.rowid`) accepts them.
    func rowids(_ source: TableSource, targetWithoutRowid: Bool) throws -> [MigrationPlan.Loss] {
        let table = DefinitionText.quote(source.currentName), name = source.targetName.lowercased()
        var losses: [MigrationPlan.Loss] = []
        if let alias = source.targetAlias, let old = source.origin[alias], source.currentAlias != old.key {
            let nulls = try count("SELECT count(*) FROM \(table) WHERE \(DefinitionText.quote(old.name)) IS NULL")
            if nulls > 0 {
                losses.append(
                    .init(
                        text: "table \(source.targetName): column \(alias) becomes the rowid (INTEGER PRIMARY KEY), and \(nulls) row(s) hold NULL "
                            + "in it, which SQLite would replace with new numbers",
                        allowed: directives.allowsConversion(table: name, column: alias)))
            }
        }
        if source.rowidCopy(targetWithoutRowid: targetWithoutRowid) == .impossible {
            let rows = try count("SELECT count(*) FROM \(table)")
            if rows > 0 {
                losses.append(
                    .init(
                        text: "table \(source.targetName): columns named rowid, oid and _rowid_ hide the rowid, so its \(rows) row(s) "
                            + "would get new rowids; rename one of those columns",
                        allowed: directives.allowsConversion(table: name, column: "rowid")))
            }
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
        let strictTarget = new.options.contains("strict"), strictSource = old.options.contains("strict")
        for set in targetUniqueSets.sorted(by: { $0.joined() < $1.joined() }) {
            // Rows are equal as the target compares them: under each key column's collation there.
            let parts = set.map(Self.uniquePart)
            let columns = parts.compactMap { part in source.targetColumns.first { $0.key == part.column } }
            let converting = columns.count == parts.count
                && columns.contains { column in
                    guard let origin = source.origin[column.key] else { return false }
                    return origin.type.lowercased() != column.type.lowercased() || strictTarget != strictSource
                }
            if converting {
                // A new declared type can make values equal ('1' and '01' both 1 under INTEGER), even under a key the table has.
                let duplicated = try ConversionProbe.duplicates(
                    rows: "SELECT \(parts.map { DefinitionText.quote($0.column) }.joined(separator: ", ")) FROM \(rows)", in: db,
                    columns: zip(columns, parts).map { ($0.type, $1.collation) }, strict: strictTarget)
                let described = parts.map(\.column).joined(separator: ", ")
                if duplicated > 0 { refuse("\(duplicated) row(s) would share values of the UNIQUE (\(described)) once converted to the new type") }
                continue
            }
            guard !existing.contains(set) else { continue }
            let names = parts.map { DefinitionText.quote($0.column) + ($0.collation.map { " COLLATE \(DefinitionText.quote($0))" } ?? "") }
            let duplicated = try count(
                "SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM \(rows) WHERE "
                    + parts.map { "\(DefinitionText.quote($0.column)) IS NOT NULL" }.joined(separator: " AND ")
                    + " GROUP BY \(names.joined(separator: ", ")) HAVING count(*) > 1)")
            let described = parts.map { $0.column + ($0.collation.map { " COLLATE \($0.uppercased())" } ?? "") }.joined(separator: ", ")
            if duplicated > 0 { refuse("\(duplicated) row(s) share values of the new UNIQUE (\(described))") }
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

    /// The column sets a table keeps unique: its primary key and every full, column-only unique
    /// index. Each member is a lowercased column name, followed by `\u{1F}` and the lowercased
    /// collation when the key compares it with one other than BINARY (see ``uniquePart(_:)``):
    /// the same columns under another collation are another set, which may find duplicates
    /// the old one did not ('Bob' and 'bob' under NOCASE).
    static func uniqueSets(_ db: Database, table: String) throws -> Set<[String]> {
        var sets: Set<[String]> = []
        let indexes = try Row.fetchAll(
            db, sql: "SELECT name, origin FROM pragma_index_list(?) WHERE \"unique\" = 1 AND partial = 0", arguments: [table])
        if !indexes.contains(where: { ($0["origin"] as String?) == "pk" }) {
            // A rowid alias (INTEGER PRIMARY KEY) has no index: its values are integers, which every collation compares alike.
            let primaryKey = try String.fetchAll(
                db, sql: "SELECT lower(name) FROM pragma_table_xinfo(?) WHERE pk > 0 ORDER BY pk", arguments: [table])
            if !primaryKey.isEmpty { sets.insert(primaryKey.sorted()) }
        }
        for index in indexes {
            let members = try Row.fetchAll(
                db, sql: "SELECT lower(name) AS name, lower(coll) AS coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno",
                arguments: [index["name"] as String])
            guard !members.isEmpty, members.allSatisfy({ ($0["name"] as String?) != nil }) else { continue }
            sets.insert(
                members.map { row in
                    let name: String = row["name"], collation: String = row["coll"] ?? "binary"
                    return collation == "binary" ? name : name + "\u{1F}" + collation
                }.sorted())
        }
        return sets
    }

    /// A member of a ``uniqueSets(_:table:)`` set: the column, and its collation when not BINARY.
    static func uniquePart(_ member: String) -> (column: String, collation: String?) {
        let parts = member.split(separator: "\u{1F}", maxSplits: 1, omittingEmptySubsequences: false)
        return (String(parts[0]), parts.count > 1 ? String(parts[1]) : nil)
    }

    private func count(_ sql: String) throws -> Int {
        try Int.fetchOne(db, sql: sql) ?? 0
    }
}
