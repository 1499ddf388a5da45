import GRDB

/// One planning of ``DeclarativePlanner``: the file's schema against the target's, worked
/// through in the plan's order, each step adding its statements to the plan's groups.
///
/// Made for one file and used once: ``DeclarativePlanner/steps(for:)`` calls its steps in
/// order, then takes ``steps``.
struct DeclarativePlanning {
    typealias Step = MigrationPlan.Step

    let planner: DeclarativePlanner
    let db: Database
    let target: DeclarativeTarget
    let current: SchemaCatalog
    let withRowid: Set<String>
    let losses: LossCheck
    var directives: SchemaDirectives { planner.schema.directives }
    var wanted: SchemaCatalog { target.catalog }

    /// Which current table each target table comes from: the same name, or a declared old name.
    private(set) var origins: [String: String] = [:]
    /// Where each kept target table's columns come from.
    private(set) var sources: [String: TableSource] = [:]
    /// Tables whose indexes and triggers go with them and must be made again.
    private(set) var remade: Set<String> = []
    /// Losses of new constraints on tables that need no step of their own, by table: a new
    /// unique index carries them.
    private(set) var constraintLosses: [String: [MigrationPlan.Loss]] = [:]
    /// The indexes as they are once tables are dropped and renamed.
    private(set) var renamedIndexes: [String: SchemaCatalog.Object] = [:]

    // The plan's groups, in the order they run.
    private(set) var dropOthers: [Step] = []
    private(set) var dropIndexes: [Step] = []
    private(set) var dropTables: [Step] = []
    private(set) var renames: [Step] = []
    private(set) var tableSteps: [Step] = []
    private(set) var createIndexes: [Step] = []
    private(set) var createOthers: [Step] = []

    /// Reads the file's schema, in `db`.
    init(planner: DeclarativePlanner, db: Database) throws {
        self.planner = planner
        self.db = db
        target = planner.schema.target
        current = try SchemaCatalog.read(db)
        withRowid = try TableSource.Column.tablesWithRowid(db)
        losses = LossCheck(db: db, directives: planner.schema.directives)
    }

    /// Every step, in the order they run; losses no step carries refuse the plan all the same.
    var steps: [Step] {
        let unplaced = constraintLosses.values.flatMap { $0 }
        return dropOthers + dropIndexes + dropTables + renames + tableSteps + createIndexes + createOthers
            + (unplaced.isEmpty ? [] : [Step("SELECT 1;", losses: unplaced)])
    }

    /// Whether tables change in a way that views and triggers, which may read any table, must follow.
    private var structural: Bool {
        !dropTables.isEmpty || !renames.isEmpty || !remade.subtracting(wanted.tables.keys.filter { sources[$0] == nil }).isEmpty
    }

    /// 1. Matches each target table with the current table it comes from.
    mutating func matchTables() {
        for name in wanted.tables.keys where current.tables[name] != nil { origins[name] = name }
        for (name, old) in directives.tableRenames.sorted(by: { $0.key < $1.key })
        where origins[name] == nil && current.tables[old] != nil && wanted.tables[old] == nil && !origins.values.contains(old) {
            origins[name] = old
        }
    }

    /// 2. Drops the current tables no target table comes from.
    mutating func dropOldTables() throws {
        let kept = Set(origins.values)
        for name in current.tables.keys.sorted() where !kept.contains(name) {
            let object = current.tables[name]!
            dropTables.append(Step("DROP TABLE \(DefinitionText.quote(object.name));", losses: try losses.droppedTable(object.name)))
        }
    }

    /// 3. Renames tables and columns as the directives say, and finds where each target column comes from.
    mutating func renameTablesAndColumns() throws {
        let q = DefinitionText.quote
        for (name, old) in origins.sorted(by: { $0.key < $1.key }) {
            let targetName = wanted.tables[name]!.name, currentName = current.tables[old]!.name
            if name != old { renames.append(Step("ALTER TABLE \(q(currentName)) RENAME TO \(q(targetName));")) }
            let targetColumns = target.columns[name] ?? []
            let currentColumns = try TableSource.Column.read(db, table: currentName)
            let byKey = Dictionary(currentColumns.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
            let targetKeys = Set(targetColumns.map(\.key))
            var origin: [String: TableSource.Column] = [:]
            for column in targetColumns { origin[column.key] = byKey[column.key] }
            for column in targetColumns where origin[column.key] == nil {
                guard let oldKey = directives.columnRenames[name]?[column.key], let old = byKey[oldKey], !targetKeys.contains(oldKey),
                    !origin.values.contains(where: { $0.key == oldKey })
                else { continue }
                origin[column.key] = old
                renames.append(Step("ALTER TABLE \(q(targetName)) RENAME COLUMN \(q(old.name)) TO \(q(column.name));"))
            }
            sources[name] = TableSource(
                targetName: targetName, currentName: currentName, targetColumns: targetColumns, currentColumns: currentColumns, origin: origin,
                hasRowid: withRowid.contains(old), currentAlias: try TableSource.Column.rowidAlias(db, table: currentName),
                targetAlias: target.rowidAliases[name])
        }
    }

    /// 4. Creates new tables, and changes each kept table that differs: columns added at
    /// its end, or a rebuild. Each is compared with the table as it is once dropped and
    /// renamed: a scratch copy of the schema with those steps run, or the file itself when
    /// there are none.
    mutating func changeTables() throws {
        var scratch: DatabaseQueue?
        if !dropTables.isEmpty || !renames.isEmpty {
            let copy = try current.emptyCopy()
            try copy.writeWithoutTransaction { scratchDB in
                for step in dropTables + renames { try scratchDB.execute(sql: step.sql) }
            }
            scratch = copy
        }
        defer { try? scratch?.close() }
        if let scratch {
            try scratch.read { try changeTables(renamed: $0) }
        } else {
            try changeTables(renamed: db)
        }
    }

    private mutating func changeTables(renamed renamedDB: Database) throws {
        let q = DefinitionText.quote
        let renamed = try SchemaReader.read(renamedDB)
        renamedIndexes = try SchemaCatalog.read(renamedDB).indexes
        for object in wanted.tables.values.sorted(by: { $0.position < $1.position }) {
            let name = object.name.lowercased()
            guard let source = sources[name] else {
                tableSteps.append(Step(object.sql + ";"))
                remade.insert(name)
                continue
            }
            let old = renamed.tables[name]!, new = target.schema.tables[name]!
            let found = try losses.newConstraints(
                source, old: old, new: new, parents: sources, targetUniqueSets: target.uniqueSets[name] ?? [], current: renamedDB)
            if old == new {
                constraintLosses[name] = found
                continue
            }
            if old.options.contains(where: { $0.hasPrefix("virtual") }) || new.options.contains(where: { $0.hasPrefix("virtual") }) {
                tableSteps.append(Step("DROP TABLE \(q(source.targetName));\n\(object.sql);", losses: try losses.droppedTable(source.currentName)))
                remade.insert(name)
            } else if let added = planner.addedColumns(old, new, sql: object.sql), found.isEmpty {
                tableSteps += added.map { Step("ALTER TABLE \(q(source.targetName)) ADD COLUMN \($0);") }
            } else {
                let converted = try losses.convertedColumns(
                    source, strictTarget: new.options.contains("strict"), strictSource: old.options.contains("strict"))
                let sequence = try DeclarativePlanner.sequence(of: source.currentName, in: db)
                let keys = try losses.rowids(source, targetWithoutRowid: new.options.contains("without rowid"))
                tableSteps.append(
                    Step(
                        try planner.rebuild(source, sql: object.sql, new: new, sequence: sequence),
                        losses: try losses.droppedColumns(source) + converted + keys + found, keepsRowsOf: source.targetName))
                remade.insert(name)
            }
        }
    }

    /// 5. Indexes: made again with a rebuilt table; otherwise dropped and made when they change.
    mutating func changeIndexes() {
        var kept: Set<String> = []
        for (name, object) in current.indexes.sorted(by: { $0.key < $1.key }) {
            let table = origins.first(where: { $0.value == object.table })?.key
            guard let table, !remade.contains(table) else { continue }  // goes with its table
            if let same = wanted.indexes[name], same.table == table, let after = renamedIndexes[name],
                SQLLexer.normalize(same.sql) == SQLLexer.normalize(after.sql)
            {
                kept.insert(name)
                continue
            }
            dropIndexes.append(Step("DROP INDEX \(DefinitionText.quote(object.name));"))
        }
        for object in wanted.indexes.values.sorted(by: { $0.position < $1.position }) where !kept.contains(object.name.lowercased()) {
            createIndexes.append(Step(object.sql + ";", losses: constraintLosses.removeValue(forKey: object.table) ?? []))
        }
    }

    /// 6. Views and triggers: all made again after a structural change, since they may read
    /// any table; otherwise dropped and made when they change.
    mutating func changeViewsAndTriggers() {
        let structural = structural
        for (kind, have, want) in [("TRIGGER", current.triggers, wanted.triggers), ("VIEW", current.views, wanted.views)] {
            for (name, object) in have.sorted(by: { $0.key < $1.key }) {
                if !structural, let kept = want[name], SQLLexer.normalize(kept.sql) == SQLLexer.normalize(object.sql) { continue }
                dropOthers.append(Step("DROP \(kind) IF EXISTS \(DefinitionText.quote(object.name));"))
            }
        }
        for want in [wanted.views, wanted.triggers] {
            for object in want.values.sorted(by: { $0.position < $1.position }) {
                let name = object.name.lowercased()
                let have = current.views[name] ?? current.triggers[name]
                if !structural, !remade.contains(object.table), let have, SQLLexer.normalize(have.sql) == SQLLexer.normalize(object.sql) {
                    continue
                }
                createOthers.append(Step(object.sql + ";"))
            }
        }
    }
}
