/// The operations of ``HistoryGenerator`` that add indexes, views, triggers and virtual
/// tables, and those that change rows.
extension HistoryGenerator {
    // MARK: - Indexes, views, triggers

    /// An index over one or two columns: plain, partial, on `lower()` or descending.
    mutating func createIndex() -> Bool {
        let candidates = ordinaryTables.filter { $0.columns.count >= 2 }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        let columns = Array(shuffled(table.columns.filter { !$0.isKey }).prefix(1 + random.below(2)))
        guard !columns.isEmpty else { return false }
        let lowered = columns.count == 1 && columns[0].kind == .text && random.chance(40)
        let object = HistoryModel.Object(
            name: freshName("\(table.name)_by_\(columns[0].name)"),
            kind: .index(table: table.id, columns: columns.map(\.id), lowered: lowered, partial: random.chance(30), descending: random.chance(20)))
        add(object)
        return true
    }

    /// Creates `object` and records it.
    mutating func add(_ object: HistoryModel.Object) {
        emit(model.createSQL(object))
        model.objects.append(object)
    }

    /// A view over some columns of one table, perhaps filtered.
    mutating func createView() -> Bool {
        let candidates = plainTables.filter { $0.columns.count >= 2 }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        let columns = Array(shuffled(table.columns.filter { !$0.isKey }).prefix(1 + random.below(3)))
        add(HistoryModel.Object(
            name: freshName("\(table.name)_view"),
            kind: .view(table: table.id, columns: columns.map(\.id), filter: random.chance(50) ? columns[0].id : nil)))
        return true
    }

    /// A view joining a child table to its parent over a foreign key.
    mutating func createJoinView() -> Bool {
        let links = plainTables.flatMap { child in
            child.columns.compactMap { column in
                column.reference.flatMap { parent in model.table(parent).isPlain ? (child, column, model.table(parent)) : nil }
            }
        }
        guard !links.isEmpty else { return false }
        let (child, foreignKey, parent) = random.pick(links)
        let parentColumn = random.pick(parent.columns)
        add(HistoryModel.Object(
            name: freshName("\(child.name)_with_\(parent.name)"),
            kind: .joinView(child: child.id, foreignKey: foreignKey.id, parent: parent.id, parentColumn: parentColumn.id, alias: "parent_\(parentColumn.name)")))
        return true
    }

    /// An audit log: a new table, and a trigger that writes a row into it on every update of a column.
    mutating func createAuditTrigger() -> Bool {
        let candidates = plainTables.filter { $0.columns.count >= 2 && !$0.name.hasSuffix("_log") }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        let column = random.pick(table.columns.filter { !$0.isKey })
        var log = Table(id: model.newID(), name: freshName(table.name + "_log"), kind: .plain, columns: [])
        log.columns = [
            Column(id: model.newID(), name: "id", kind: .integer, declaredType: "INTEGER", isKey: true),
            Column(id: model.newID(), name: "ref", kind: .integer, declaredType: "INTEGER", notNull: true),
            Column(id: model.newID(), name: "note", kind: .text, declaredType: "TEXT"),
        ]
        model.tables.append(log)
        emit(model.createSQL(log))
        add(HistoryModel.Object(
            name: freshName("\(table.name)_\(column.name)_audit"),
            kind: .audit(table: table.id, column: column.id, log: log.id, ref: log.columns[1].id, note: log.columns[2].id)))
        if updatable(column, in: table) && random.chance(60) { updateRows(in: table.id, column: column) }
        return true
    }

    /// A counter on the parent row, bumped by every child row inserted.
    mutating func createCounterTrigger() -> Bool {
        let links = plainTables.flatMap { child in
            child.columns.compactMap { column in
                column.reference.flatMap { parent in model.table(parent).isPlain ? (child, column, model.table(parent)) : nil }
            }
        }
        guard !links.isEmpty else { return false }
        let (child, foreignKey, parent) = random.pick(links)
        var counter = Column(id: model.newID(), name: freshColumnName(in: parent, child.name + "_count"), kind: .integer, declaredType: "INTEGER")
        counter.notNull = true
        counter.defaultSQL = "0"
        emit("ALTER TABLE \(parent.name) ADD COLUMN " + model.columnSQL(counter, autoincrement: false))
        model.tables[model.tableIndex(parent.id)].columns.append(counter)
        let p = model.table(parent.id), c = model.table(child.id)
        emit("UPDATE \(p.name) SET \(counter.name) = (SELECT count(*) FROM \(c.name) WHERE \(c.column(foreignKey.id)!.name) = \(p.name).\(p.key!.name))")
        add(HistoryModel.Object(
            name: freshName("\(child.name)_counts"),
            kind: .counter(child: child.id, foreignKey: foreignKey.id, parent: parent.id, counter: counter.id)))
        return true
    }

    /// Drops an index, a view or a trigger; never the triggers that keep an external-content
    /// FTS table in step with its rows (its index would no longer match them).
    mutating func dropObject() -> Bool {
        let candidates = model.objects.filter { object in
            if case let .sync(_, virtual, _, _, _) = object.kind, case .virtual(.fts5External) = model.table(virtual).kind { return false }
            return true
        }
        guard !candidates.isEmpty else { return false }
        dropObjects([random.pick(candidates)])
        return true
    }

    // MARK: - Virtual tables

    /// A virtual table filled from a plain table's rows, with triggers that keep it in step.
    mutating func createVirtual(_ requested: HistoryModel.Virtual) -> Bool {
        let isRTree = requested == .rtree
        let candidates = isRTree ? plainTables : textSources
        guard !candidates.isEmpty else { return false }
        let source = random.pick(candidates)
        let key = source.key!
        let texts = source.columns.filter { !$0.isKey && $0.kind == .text && $0.reference == nil }
        let used = isRTree ? Array(texts.prefix(1)) : Array(shuffled(texts).prefix(1 + random.below(2)))
        let kind: HistoryModel.Virtual
        if case .fts5External = requested { kind = .fts5External(content: source.id) } else { kind = requested }
        let base: String
        switch kind {
        case .fts5External, .fts5Contentless: base = source.name + "_search"
        case .fts5Trigram: base = source.name + "_trigram"
        case .fts4: base = source.name + "_fts4"
        case .rtree: base = source.name + "_box"
        }
        var virtual = Table(id: model.newID(), name: freshName(base), kind: .virtual(kind), columns: [])
        let names = isRTree ? ["id", "minx", "maxx", "miny", "maxy"] : used.map(\.name)
        virtual.columns = names.map { Column(id: model.newID(), name: $0, kind: .text, declaredType: "") }
        model.tables.append(virtual)
        emit(model.createSQL(virtual))
        let targets = isRTree ? [] : virtual.columns.map(\.id)
        let columnList = used.map(\.name).joined(separator: ", ")
        switch kind {
        case .fts5External:
            emit("INSERT INTO \(virtual.name) (\(virtual.name)) VALUES ('rebuild')")
            for event in [HistoryModel.Event.insert, .delete, .update] {
                add(syncTrigger(source, virtual, event, used, targets))
            }
        case .rtree:
            let c = used.first.map { "coalesce(length(\($0.name)), 0)" } ?? "0"
            emit("INSERT INTO \(virtual.name) SELECT \(key.name), \(key.name), \(key.name) + 0.5, \(c), \(c) + 1 FROM \(source.name)")
            if random.chance(70) { add(syncTrigger(source, virtual, .insert, used, targets)) }
        case .fts4:
            emit("INSERT INTO \(virtual.name) (docid, \(virtual.columns.map(\.name).joined(separator: ", "))) SELECT \(key.name), \(columnList) FROM \(source.name)")
            if random.chance(70) { add(syncTrigger(source, virtual, .insert, used, targets)) }
        case .fts5Contentless, .fts5Trigram:
            emit("INSERT INTO \(virtual.name) (rowid, \(virtual.columns.map(\.name).joined(separator: ", "))) SELECT \(key.name), \(columnList) FROM \(source.name)")
            if random.chance(70) { add(syncTrigger(source, virtual, .insert, used, targets)) }
        }
        return true
    }

    /// The trigger that replays `event` on `source` into `virtual`.
    mutating func syncTrigger(_ source: Table, _ virtual: Table, _ event: HistoryModel.Event, _ columns: [Column], _ targets: [Int]) -> HistoryModel.Object {
        HistoryModel.Object(
            name: freshName("\(virtual.name)_\(event.rawValue.lowercased())"),
            kind: .sync(table: source.id, virtual: virtual.id, event: event, columns: columns.map(\.id), targets: targets))
    }

    /// An FTS maintenance command: the index's rows change, the search results do not.
    mutating func optimizeIndex() -> Bool {
        let candidates = virtualTables.filter { $0.kind != .virtual(.rtree) }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        let command = table.kind == .virtual(.fts4) ? random.pick(["optimize", "rebuild"]) : "optimize"
        emit("INSERT INTO \(table.name) (\(table.name)) VALUES ('\(command)')")
        return true
    }

    // MARK: - Rows

    /// Inserts literal rows into a plain table.
    mutating func insertRows() -> Bool {
        let candidates = plainTables
        guard !candidates.isEmpty else { return false }
        insertRows(into: random.pick(candidates).id)
        return true
    }

    /// Inserts one to three rows into table `id`, each distinct from every other row the history inserts.
    mutating func insertRows(into id: Int) {
        let table = model.table(id)
        let columns = table.columns.filter { !$0.isKey && ($0.defaultSQL == nil || random.chance(60)) }
        guard !columns.isEmpty else {
            emit("INSERT INTO \(table.name) DEFAULT VALUES")
            return
        }
        var rows: [String] = []
        for _ in 0..<(1 + random.below(3)) {
            rowsInserted += 1
            rows.append("(" + columns.map { literal($0, row: rowsInserted) }.joined(separator: ", ") + ")")
        }
        emit("INSERT INTO \(table.name) (\(columns.map(\.name).joined(separator: ", "))) VALUES " + rows.joined(separator: ", "))
    }

    /// Updates a column of some rows of a plain table.
    mutating func updateRows() -> Bool {
        let candidates = plainTables.filter { table in table.columns.contains { updatable($0, in: table) } }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        updateRows(in: table.id, column: random.pick(table.columns.filter { updatable($0, in: table) }))
        return true
    }

    /// Columns an update may change without breaking a key, a foreign key or a CHECK.
    func updatable(_ column: Column, in table: Table) -> Bool {
        !column.isKey && !column.unique && column.reference == nil && column.kind != .blob && column.kind != .date
    }

    /// Updates `column` in some rows of table `id`.
    mutating func updateRows(in id: Int, column: Column) {
        let table = model.table(id)
        let value: String
        if let allowed = column.allowed {
            value = "'\(allowed[version % allowed.count])'"
        } else {
            switch column.kind {
            case .text: value = "\(column.name) || ' \(random.pick(Self.textWords))'"
            case .integer: value = "\(column.name) + 1"
            case .real: value = "\(column.name) / 2"
            case .boolean: value = "NOT \(column.name)"
            case .blob, .date: value = column.name
            }
        }
        guard let key = table.key else { return }
        emit("UPDATE \(table.name) SET \(column.name) = \(value) WHERE \(key.name) % \(2 + random.below(3)) = \(random.below(2))")
    }

    /// Deletes some rows of a table nothing references and no virtual table copies from
    /// without a delete trigger.
    mutating func deleteRows() -> Bool {
        let candidates = plainTables.filter { table in
            model.referrers(of: table.id).isEmpty && !model.objects.contains { object in
                if case let .sync(source, virtual, .insert, _, _) = object.kind, source == table.id {
                    return model.table(virtual).kind != .virtual(.fts5External(content: table.id))
                }
                return false
            }
        }
        guard !candidates.isEmpty else { return false }
        let table = random.pick(candidates)
        emit("DELETE FROM \(table.name) WHERE \(table.key!.name) % \(3 + random.below(3)) = 1")
        return true
    }
}
