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
/// ``DeclarativePlanning`` works through these in its steps, in the order they are found
/// (tables matched, dropped, renamed, changed; then indexes; then views and triggers).
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
        var planning = try DeclarativePlanning(planner: self, db: db)
        planning.matchTables()
        try planning.dropOldTables()
        try planning.renameTablesAndColumns()
        try planning.changeTables()
        planning.changeIndexes()
        planning.changeViewsAndTriggers()
        return planning.steps
    }

    /// The column definitions to add when `new` is `old` with columns added at the end that
    /// `ALTER TABLE ADD COLUMN` accepts (no key, no stored expression, a constant default
    /// where `NOT NULL`); nil when the table needs a rebuild.
    func addedColumns(_ old: NormalizedSchema.Table, _ new: NormalizedSchema.Table, sql: String) -> [String]? {
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
    func rebuild(_ source: TableSource, sql: String, new: NormalizedSchema.Table, sequence: Int64?) throws -> String {
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
    static func sequence(of table: String, in db: Database) throws -> Int64? {
        guard try db.tableExists("sqlite_sequence") else { return nil }
        return try Int64.fetchOne(db, sql: "SELECT max(seq) FROM sqlite_sequence WHERE name = ?", arguments: [table])
    }
}
