import GRDB

/// Works out the steps that bring a file's schema to a declarative `schema.sql`.
///
/// SQLite parses both sides: the target is `schema.sql` run into an empty in-memory
/// database, and both are compared through `sqlite_schema` and `PRAGMA table_xinfo`,
/// `index_list`, `index_info` and `foreign_key_list` (see ``SchemaReader``). The plan:
///
/// 1. drop the views and triggers that change (all of them when any table is rebuilt,
///    renamed or dropped, since those may read it), and the indexes that change;
/// 2. drop the tables `schema.sql` no longer has;
/// 3. rename tables and columns, only where a `-- accountd: renamed-from` line says so;
/// 4. create new tables; add trailing columns with `ALTER TABLE ADD COLUMN` where that is
///    enough, else rebuild the table as SQLite documents it (create the new table, copy the
///    shared columns, drop the old one, rename the new one);
/// 5. create the indexes, views and triggers that are new, changed or went with a rebuilt table.
///
/// Every loss is counted in the file before anything is written (see ``LossCheck``). The
/// target is read once, when the bundle loads (``DeclarativeTarget``): planning reads only
/// the account's file. Whether the plan reaches `schema.sql` is checked where it runs, by
/// the migrator's schema comparison before commit.
struct DeclarativePlanner {
    var schema: DeclarativeSchema

    /// The steps for the file open in `db`. Reads only.
    ///
    /// - Throws: ``AccountdError`` (`migrationFailed`) when a table's definition cannot be
    ///   rewritten; SQLite errors from reading the file.
    func steps(for db: Database) throws -> [MigrationPlan.Step] {
        typealias Step = MigrationPlan.Step
        let target = schema.target
        let wanted = target.catalog
        let wantedSchema = target.schema
        let current = try SchemaCatalog.read(db)
        let withRowid = try TableSource.Column.tablesWithRowid(db)
        let directives = schema.directives
        let losses = LossCheck(db: db, directives: directives)
        let q = DefinitionText.quote

        // Which current table each target table comes from: the same name, or a declared old name.
        var origins: [String: String] = [:]
        for name in wanted.tables.keys where current.tables[name] != nil { origins[name] = name }
        for (name, old) in directives.tableRenames.sorted(by: { $0.key < $1.key })
        where origins[name] == nil && current.tables[old] != nil && wanted.tables[old] == nil && !origins.values.contains(old) {
            origins[name] = old
        }
        let keptOrigins = Set(origins.values)

        var dropTables: [Step] = []
        for name in current.tables.keys.sorted() where !keptOrigins.contains(name) {
            let object = current.tables[name]!
            dropTables.append(Step("DROP TABLE \(q(object.name));", losses: try losses.droppedTable(object.name)))
        }

        // Renames, and where each target column comes from.
        var renames: [Step] = []
        var sources: [String: TableSource] = [:]
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

        // The tables as they are once dropped and renamed: what each kept table is compared with.
        // Without drops or renames, that is the file itself.
        var scratch: DatabaseQueue?
        if !dropTables.isEmpty || !renames.isEmpty {
            let copy = try current.emptyCopy()
            try copy.writeWithoutTransaction { scratchDB in
                for step in dropTables + renames { try scratchDB.execute(sql: step.sql) }
            }
            scratch = copy
        }
        defer { try? scratch?.close() }

        var tableSteps: [Step] = []
        var remade: Set<String> = []  // tables whose indexes and triggers go and must be made again
        var constraintLosses: [String: [MigrationPlan.Loss]] = [:]
        var renamedIndexes: [String: SchemaCatalog.Object] = [:]
        func renamedRead(_ body: (Database) throws -> Void) throws {
            if let scratch { try scratch.read(body) } else { try body(db) }
        }
        try renamedRead { renamedDB in
            let renamed = try SchemaReader.read(renamedDB)
            renamedIndexes = try SchemaCatalog.read(renamedDB).indexes
            for object in wanted.tables.values.sorted(by: { $0.position < $1.position }) {
                let name = object.name.lowercased()
                guard let source = sources[name] else {
                    tableSteps.append(Step(object.sql + ";"))
                    remade.insert(name)
                    continue
                }
                let old = renamed.tables[name]!, new = wantedSchema.tables[name]!
                let found = try losses.newConstraints(
                    source, old: old, new: new, parents: sources, targetUniqueSets: target.uniqueSets[name] ?? [], current: renamedDB)
                if old == new {
                    constraintLosses[name] = found
                    continue
                }
                if old.options.contains(where: { $0.hasPrefix("virtual") }) || new.options.contains(where: { $0.hasPrefix("virtual") }) {
                    tableSteps.append(Step("DROP TABLE \(q(source.targetName));\n\(object.sql);", losses: try losses.droppedTable(source.currentName)))
                    remade.insert(name)
                } else if let added = addedColumns(old, new, sql: object.sql), found.isEmpty {
                    tableSteps += added.map { Step("ALTER TABLE \(q(source.targetName)) ADD COLUMN \($0);") }
                } else {
                    let converted = try losses.convertedColumns(
                        source, strictTarget: new.options.contains("strict"), strictSource: old.options.contains("strict"))
                    let sequence = try Self.sequence(of: source.currentName, in: db)
                    let keys = try losses.rowids(source, targetWithoutRowid: new.options.contains("without rowid"))
                    tableSteps.append(
                        Step(
                            try rebuild(source, sql: object.sql, new: new, sequence: sequence),
                            losses: try losses.droppedColumns(source) + converted + keys + found, keepsRowsOf: source.targetName))
                    remade.insert(name)
                }
            }
        }

        // Indexes: made again with a rebuilt table; otherwise dropped and made when they change.
        let structural = !dropTables.isEmpty || !renames.isEmpty || !remade.subtracting(wanted.tables.keys.filter { sources[$0] == nil }).isEmpty
        var dropIndexes: [Step] = [], createIndexes: [Step] = [], keptIndexes: Set<String> = []
        for (name, object) in current.indexes.sorted(by: { $0.key < $1.key }) {
            let table = origins.first(where: { $0.value == object.table })?.key
            guard let table, !remade.contains(table) else { continue }  // goes with its table
            if let kept = wanted.indexes[name], kept.table == table, let after = renamedIndexes[name],
                SQLLexer.normalize(kept.sql) == SQLLexer.normalize(after.sql)
            {
                keptIndexes.insert(name)
                continue
            }
            dropIndexes.append(Step("DROP INDEX \(q(object.name));"))
        }
        for object in wanted.indexes.values.sorted(by: { $0.position < $1.position }) where !keptIndexes.contains(object.name.lowercased()) {
            createIndexes.append(Step(object.sql + ";", losses: constraintLosses.removeValue(forKey: object.table) ?? []))
        }

        // Views and triggers: all made again after a structural change, since they may read any table.
        var dropOthers: [Step] = [], createOthers: [Step] = []
        for (kind, have, want) in [("TRIGGER", current.triggers, wanted.triggers), ("VIEW", current.views, wanted.views)] {
            for (name, object) in have.sorted(by: { $0.key < $1.key }) {
                if !structural, let kept = want[name], SQLLexer.normalize(kept.sql) == SQLLexer.normalize(object.sql) { continue }
                dropOthers.append(Step("DROP \(kind) IF EXISTS \(q(object.name));"))
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
        // Losses no step above carries (a new unique index is the only source) refuse the plan all the same.
        let unplaced = constraintLosses.values.flatMap { $0 }
        let steps = dropOthers + dropIndexes + dropTables + renames + tableSteps + createIndexes + createOthers
            + (unplaced.isEmpty ? [] : [Step("SELECT 1;", losses: unplaced)])
        return steps
    }

    /// The column definitions to add when `new` is `old` with columns added at the end that
    /// `ALTER TABLE ADD COLUMN` accepts (no key, no stored expression, a constant default
    /// where `NOT NULL`); nil when the table needs a rebuild.
    private func addedColumns(_ old: NormalizedSchema.Table, _ new: NormalizedSchema.Table, sql: String) -> [String]? {
        guard new.columns.count > old.columns.count, Array(new.columns.prefix(old.columns.count)) == old.columns,
            new.foreignKeys == old.foreignKeys, new.checks == old.checks, new.uniques == old.uniques, new.options == old.options
        else { return nil }
        var definitions: [String] = []
        for column in new.columns.dropFirst(old.columns.count) {
            let value = column.defaultValue?.lowercased()
            guard column.primaryKeyPosition == 0, column.hidden == 0, !(column.notNull && (value == nil || value == "null")),
                !(value?.hasPrefix("(") ?? false), !["current_time", "current_date", "current_timestamp"].contains(value ?? ""),
                let definition = DefinitionText.columnDefinition(sql, column: column.name)
            else { return nil }
            definitions.append(definition)
        }
        return definitions
    }

    /// SQLite's documented rebuild: the new table under a temporary name, the shared columns
    /// (and the rowid, when both tables have one: see ``TableSource/rowidCopy(targetWithoutRowid:)``) copied, the old table
    /// dropped, the new one renamed.
    ///
    /// An `AUTOINCREMENT` table's counter (`sequence`, its `sqlite_sequence` row before the
    /// rebuild) is carried over: dropping the old table drops its row, and the copy alone
    /// would set it to the largest id left, so a deleted row's id would be used again.
    private func rebuild(_ source: TableSource, sql: String, new: NormalizedSchema.Table, sequence: Int64?) throws -> String {
        // The new table keeps each row's rowid, so that nothing that stored one (an FTS index, the app) is left pointing elsewhere.
        let q = DefinitionText.quote
        let temporary = "accountd_new_" + source.targetName
        guard let create = DefinitionText.renamingCreated(sql, to: temporary) else {
            throw AccountdError(.migrationFailed, "schema.sql: cannot find the name of table \(source.targetName) in its CREATE TABLE statement")
        }
        var columns: [String] = [], values: [String] = []
        for column in source.targetColumns where source.origin[column.key] != nil {
            guard let value = source.value(of: column, renamed: true) else { continue }
            columns.append(q(column.name))
            values.append(value)
        }
        if case .copy(let from, let into) = source.rowidCopy(targetWithoutRowid: new.options.contains("without rowid")) {
            columns.insert(into, at: 0)
            values.insert(from, at: 0)
        }
        let copy = columns.isEmpty
            ? ""
            : "INSERT INTO \(q(temporary)) (\(columns.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM \(q(source.targetName));\n"
        var counter = ""
        if let sequence, new.options.contains("autoincrement") {
            let name = source.targetName.quotedSQLString
            counter = """

                UPDATE sqlite_sequence SET seq = max(seq, \(sequence)) WHERE name = \(name);
                INSERT INTO sqlite_sequence (name, seq) SELECT \(name), \(sequence) WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = \(name));
                """
        }
        return """
            \(create);
            \(copy)DROP TABLE \(q(source.targetName));
            ALTER TABLE \(q(temporary)) RENAME TO \(q(source.targetName));
            """ + counter
    }

    /// The `sqlite_sequence` counter of `table` in `db`; nil when it has none.
    private static func sequence(of table: String, in db: Database) throws -> Int64? {
        guard try db.tableExists("sqlite_sequence") else { return nil }
        return try Int64.fetchOne(db, sql: "SELECT max(seq) FROM sqlite_sequence WHERE name = ?", arguments: [table])
    }
}
