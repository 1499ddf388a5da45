/// The operations of ``HistoryGenerator``: each one writes its statements and updates the
/// model, or returns false, changing nothing, when the schema has nothing it can apply to.
extension HistoryGenerator {
    /// Short names for the model's types.
    typealias Table = HistoryModel.Table
    typealias Column = HistoryModel.Column

    // MARK: - Tables

    /// A plain table with one to four columns, perhaps a foreign key, perhaps rows.
    mutating func createTable() {
        var table = Table(id: model.newID(), name: freshName(random.pick(Self.tableWords)), kind: .plain, columns: [])
        table.columns.append(Column(id: model.newID(), name: "id", kind: .integer, declaredType: "INTEGER", isKey: true))
        table.autoincrement = random.chance(15)
        for _ in 0..<(1 + random.below(4)) {
            var column = newColumn(in: table)
            if random.chance(25) { column.notNull = true }
            if random.chance(30) { column.defaultSQL = Self.defaultSQL(column.kind) }
            if column.kind == .text && random.chance(15) {
                column.unique = true
                column.defaultSQL = nil   // rows that omit it would all get the same value
            }
            if column.kind == .text && !column.unique && random.chance(15) {
                column.allowed = ["new", "open", "done"]
                column.defaultSQL = "'new'"
            }
            table.columns.append(column)
        }
        if !plainTables.isEmpty && random.chance(60) {
            let parent = random.pick(plainTables)
            var column = Column(id: model.newID(), name: freshColumnName(in: table, parent.name + "_id"), kind: .integer, declaredType: "INTEGER")
            column.reference = parent.id
            column.onDelete = random.pick([nil, "CASCADE", "SET NULL"])
            column.namesTargetColumn = random.chance(70)
            table.columns.append(column)
        }
        model.tables.append(table)
        emit(model.createSQL(table))
        if random.chance(40) { insertRows(into: table.id) }
    }

    /// A `WITHOUT ROWID` table linking two plain tables, with rows.
    mutating func createLinkTable() -> Bool {
        guard plainTables.count >= 2 else { return false }
        let pair = pickTwo(plainTables)
        var table = Table(id: model.newID(), name: freshName(pair.0.name + "_" + pair.1.name), kind: .link, columns: [])
        for parent in [pair.0, pair.1] {
            var column = Column(id: model.newID(), name: freshColumnName(in: table, parent.name + "_id"), kind: .integer, declaredType: "INTEGER")
            column.notNull = true
            column.reference = parent.id
            column.onDelete = "CASCADE"
            table.columns.append(column)
        }
        model.tables.append(table)
        emit(model.createSQL(table))
        let (a, b) = (pair.0, pair.1)
        emit("INSERT OR IGNORE INTO \(table.name) (\(table.columns[0].name), \(table.columns[1].name)) "
            + "SELECT a.\(a.key!.name), b.\(b.key!.name) FROM \(a.name) AS a, \(b.name) AS b ORDER BY 1, 2 LIMIT 4")
        return true
    }

    /// Two different tables (there must be two).
    mutating func pickTwo(_ tables: [Table]) -> (Table, Table) {
        let first = random.below(tables.count)
        var second = random.below(tables.count - 1)
        if second >= first { second += 1 }
        return (tables[first], tables[second])
    }

    /// `ALTER TABLE ... RENAME TO`, which SQLite carries into foreign keys, indexes, views and triggers.
    mutating func renameTable() -> Bool {
        // An external-content FTS table names its content table in its arguments, which
        // SQLite does not rewrite; an FTS5 table's 'delete' triggers name its hidden
        // column, which keeps the old name: both stay as they are.
        let candidates = model.tables.filter { table in
            switch table.kind {
            case .plain, .link: model.externalIndexes(of: table.id).isEmpty
            case .virtual(.fts5External): false
            case .virtual: true
            }
        }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        let name = freshName(random.pick(Self.tableWords))
        emit("ALTER TABLE \(table.name) RENAME TO \(name)")
        model.tables[model.tableIndex(table.id)].name = name
        return true
    }

    /// Drops a table nothing references, with the objects that use it first.
    mutating func dropTable() -> Bool {
        let candidates = model.tables.filter { table in
            model.referrers(of: table.id).isEmpty && model.externalIndexes(of: table.id).isEmpty
        }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        dropObjects(model.objects(using: table.id))
        emit("DROP TABLE \(table.name)")
        model.tables.removeAll { $0.id == table.id }
        return true
    }

    /// Drops `objects` explicitly and removes them from the model.
    mutating func dropObjects(_ objects: [HistoryModel.Object]) {
        for object in objects {
            emit(model.dropSQL(object))
            model.objects.removeAll { $0.name == object.name }
        }
    }

    // MARK: - Columns

    /// `ALTER TABLE ... ADD COLUMN`: nullable, NOT NULL with a default, with a CHECK, or a foreign key; perhaps backfilled.
    mutating func addColumn() -> Bool {
        let candidates = ordinaryTables
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        var column = newColumn(in: table)
        switch random.below(4) {
        case 0:
            column.notNull = true
            column.defaultSQL = Self.defaultSQL(column.kind)
        case 1 where column.kind == .text:
            column.allowed = ["low", "mid", "high"]
            column.defaultSQL = "'mid'"
        case 2 where !plainTables.isEmpty:
            let parent = random.pick(plainTables)
            column = Column(id: column.id, name: freshColumnName(in: table, parent.name + "_ref"), kind: .integer, declaredType: "INTEGER")
            column.reference = parent.id
            column.onDelete = random.pick([nil, "SET NULL"])
        default:
            break
        }
        emit("ALTER TABLE \(table.name) ADD COLUMN " + model.columnSQL(column, autoincrement: false))
        model.tables[model.tableIndex(table.id)].columns.append(column)
        if let key = table.key, random.chance(50) {
            emit("UPDATE \(table.name) SET \(column.name) = \(Self.backfill(column, key: key.name, model: model))"
                + (random.chance(50) ? " WHERE \(key.name) % 2 = 0" : ""))
        }
        return true
    }

    /// Columns `ALTER TABLE DROP COLUMN` accepts: not the key, not UNIQUE, no CHECK, no
    /// foreign key, not read by an external-content FTS table.
    func droppableColumns(_ table: Table) -> [Column] {
        let pinned = model.pinnedColumns(of: table.id)
        return table.columns.filter { column in
            !column.isKey && !column.unique && column.allowed == nil && column.reference == nil && !pinned.contains(column.id)
        }
    }

    /// `ALTER TABLE ... DROP COLUMN`, with the objects that use the column first.
    mutating func dropColumn() -> Bool {
        let candidates = ordinaryTables.filter { droppableColumns($0).count >= 1 && $0.columns.count > 2 }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        let column = random.pick(droppableColumns(table))
        dropObjects(model.objects(using: table.id, column: column.id))
        emit("ALTER TABLE \(table.name) DROP COLUMN \(column.name)")
        model.tables[model.tableIndex(table.id)].columns.removeAll { $0.id == column.id }
        return true
    }

    /// `ALTER TABLE ... RENAME COLUMN`.
    mutating func renameColumn() -> Bool {
        let candidates = ordinaryTables.filter { table in
            let pinned = model.pinnedColumns(of: table.id)
            return table.columns.contains { !pinned.contains($0.id) }
        }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        let pinned = model.pinnedColumns(of: table.id)
        let column = random.pick(table.columns.filter { !pinned.contains($0.id) })
        let name = freshColumnName(in: table)
        emit("ALTER TABLE \(table.name) RENAME COLUMN \(column.name) TO \(name)")
        let index = model.tableIndex(table.id)
        let position = model.tables[index].columns.firstIndex { $0.id == column.id }!
        model.tables[index].columns[position].name = name
        return true
    }

    // MARK: - Rebuild

    /// SQLite's 12-step rebuild of a plain table, changing what `ALTER TABLE` cannot.
    mutating func rebuildTable() -> Bool {
        let candidates = plainTables
        guard !candidates.isEmpty else { return false }
        let old = random.pick(candidates)
        let pinned = model.pinnedColumns(of: old.id)
        var new = old
        var copies: [Int: String] = [:]   // column id -> expression over the old table
        for column in old.columns { copies[column.id] = column.name }
        let free = old.columns.filter { !$0.isKey && !pinned.contains($0.id) }
        var changes = 0
        for column in free where random.chance(35) {
            let position = new.columns.firstIndex { $0.id == column.id }!
            switch random.below(5) {
            case 0:   // drop, whatever constraints the column has
                new.columns.remove(at: position)
                copies[column.id] = nil
            case 1 where !column.unique && column.allowed == nil && column.reference == nil:   // change its type
                let kind = random.pick([HistoryModel.Kind.text, .integer, .real])
                let affinity = kind == .text ? "TEXT" : kind == .integer ? "INTEGER" : "REAL"
                new.columns[position].kind = kind
                new.columns[position].declaredType = affinity
                new.columns[position].defaultSQL = column.defaultSQL.map { _ in Self.defaultSQL(kind) }
                copies[column.id] = "CAST(\(column.name) AS \(affinity))"
            case 2 where !column.unique && column.reference == nil && !column.notNull:   // NOT NULL, NULLs replaced
                let fill = column.allowed.map { "'\($0[0])'" } ?? Self.defaultSQL(column.kind)
                new.columns[position].notNull = true
                new.columns[position].defaultSQL = fill
                copies[column.id] = "coalesce(\(column.name), \(fill))"
            case 3 where column.notNull:
                new.columns[position].notNull = false
            case 4 where column.reference != nil:
                new.columns[position].onDelete = random.pick([nil, "CASCADE", "SET NULL", "RESTRICT"])
            default:
                continue
            }
            changes += 1
        }
        if random.chance(40) || changes == 0 {
            var column = newColumn(in: new)
            column.notNull = random.chance(50)
            column.defaultSQL = column.notNull || random.chance(50) ? Self.defaultSQL(column.kind) : nil
            if column.kind == .text && !column.notNull && random.chance(30) { column.unique = true; column.defaultSQL = nil }
            new.columns.append(column)
        }
        if random.chance(30) {
            let key = new.columns.removeFirst()
            new.columns = [key] + shuffled(new.columns)
        }
        if random.chance(20) { new.autoincrement.toggle() }

        // Views, and triggers on other tables, that use the table would break the rename: drop them first.
        let users = model.objects(using: old.id)
        dropObjects(users.filter { model.owner(of: $0) != old.id })
        let owned = Set(users.filter { model.owner(of: $0) == old.id }.map(\.name))
        model.objects.removeAll { owned.contains($0.name) }
        let temporary = freshName(old.name + "_new")
        emit(model.createSQL(new, as: temporary))
        let kept = new.columns.filter { copies[$0.id] != nil }
        emit("INSERT INTO \(temporary) (\(kept.map(\.name).joined(separator: ", "))) SELECT "
            + kept.map { copies[$0.id]! }.joined(separator: ", ") + " FROM \(old.name)")
        emit("DROP TABLE \(old.name)")
        emit("ALTER TABLE \(temporary) RENAME TO \(old.name)")
        model.tables[model.tableIndex(old.id)] = new
        // Everything that still has its columns comes back: indexes and triggers first, then views.
        let survivors = users.filter { object in
            model.dependencies(of: object).allSatisfy { use in use.columns.allSatisfy { model.table(use.table).column($0) != nil } }
        }
        for object in survivors.sorted(by: { model.owner(of: $0) != nil && model.owner(of: $1) == nil }) {
            emit(model.createSQL(object))
            model.objects.append(object)
        }
        return true
    }

    /// `items` in a seeded random order.
    mutating func shuffled<T>(_ items: [T]) -> [T] {
        var items = items
        for i in stride(from: items.count - 1, to: 0, by: -1) { items.swapAt(i, random.below(i + 1)) }
        return items
    }
}
