/// Test support: the schema that ``HistoryGenerator`` has built so far, as structured
/// data, and the SQL that creates each of its objects.
///
/// Objects refer to tables and columns by stable numbers, never by name, so a rename
/// changes one name in the model and every index, view and trigger renders with the new
/// name afterwards, just as SQLite rewrites them. ``dependencies(of:)`` says which tables
/// and columns an object uses, which is what decides whether a drop or a rebuild must
/// drop it first.
struct HistoryModel {
    /// What a value in a column looks like; decides literals, defaults and updates.
    enum Kind: CaseIterable { case text, integer, real, blob, boolean, date }

    /// A column of an ordinary or virtual table.
    struct Column {
        var id: Int
        var name: String
        var kind: Kind
        var declaredType: String
        var notNull = false
        var defaultSQL: String? = nil
        var unique = false
        /// `CHECK (column IN (...))` over these text literals.
        var allowed: [String]? = nil
        /// The table whose key this column references.
        var reference: Int? = nil
        var onDelete: String? = nil
        /// Whether `REFERENCES parent` names the parent's key column or leaves it implicit.
        var namesTargetColumn = true
        /// The table's `INTEGER PRIMARY KEY`.
        var isKey = false
    }

    /// How a table is declared.
    enum TableKind: Equatable {
        /// A rowid table whose first column is its `INTEGER PRIMARY KEY`.
        case plain
        /// Two foreign keys as a composite primary key, `WITHOUT ROWID`.
        case link
        /// A virtual table.
        case virtual(Virtual)
    }

    /// The kinds of virtual table, with what each reads.
    enum Virtual: Equatable {
        /// FTS5 over columns of another table (`content=`), kept in step by triggers.
        case fts5External(content: Int)
        case fts5Contentless
        case fts5Trigram(contentless: Bool)
        case fts4
        case rtree
    }

    /// A table, ordinary or virtual, and its columns in declaration order.
    struct Table {
        var id: Int
        var name: String
        var kind: TableKind
        var columns: [Column]
        var autoincrement = false

        var key: Column? { columns.first(where: \.isKey) }
        var isPlain: Bool { kind == .plain }
        var isVirtual: Bool { if case .virtual = kind { true } else { false } }
        func column(_ id: Int) -> Column? { columns.first { $0.id == id } }
    }

    /// An index, view or trigger.
    struct Object {
        var name: String
        var kind: ObjectKind
    }

    /// The statement that fires a trigger.
    enum Event: String { case insert = "INSERT", delete = "DELETE", update = "UPDATE" }

    /// What an index, view or trigger does, by table and column numbers.
    enum ObjectKind {
        case index(table: Int, columns: [Int], lowered: Bool, partial: Bool, descending: Bool)
        case view(table: Int, columns: [Int], filter: Int?)
        /// `child LEFT JOIN parent` over a foreign key, with one parent column aliased.
        case joinView(child: Int, foreignKey: Int, parent: Int, parentColumn: Int, alias: String)
        /// `AFTER UPDATE OF column` writes a row into a log table (`ref`, `note` columns).
        case audit(table: Int, column: Int, log: Int, ref: Int, note: Int)
        /// `AFTER INSERT ON child` bumps a counter column of the parent row.
        case counter(child: Int, foreignKey: Int, parent: Int, counter: Int)
        /// Keeps a virtual table in step with the rows of `table`.
        case sync(table: Int, virtual: Int, event: Event, columns: [Int], targets: [Int])
    }

    /// Tables in creation order.
    var tables: [Table] = []
    /// Indexes, views and triggers in creation order.
    var objects: [Object] = []
    private var nextID = 1

    /// A number no table or column has had.
    mutating func newID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    /// Look-ups by number; the number must exist.
    func table(_ id: Int) -> Table { tables.first { $0.id == id }! }
    func tableIndex(_ id: Int) -> Int { tables.firstIndex { $0.id == id }! }
    func name(_ table: Int) -> String { self.table(table).name }
    func name(_ table: Int, _ column: Int) -> String { self.table(table).column(column)!.name }

    /// Every name in the schema, lowercased: table, index, view and trigger names share one namespace.
    var usedNames: Set<String> {
        var names = Set(tables.map { $0.name.lowercased() })
        names.formUnion(objects.map { $0.name.lowercased() })
        // Shadow tables of virtual tables.
        for table in tables where table.isVirtual {
            for suffix in ["data", "idx", "content", "docsize", "config", "segments", "segdir", "stat", "node", "rowid", "parent"] {
                names.insert("\(table.name.lowercased())_\(suffix)")
            }
        }
        return names
    }

    // MARK: - Dependencies

    /// The tables and columns `object` uses.
    func dependencies(of object: Object) -> [(table: Int, columns: [Int])] {
        switch object.kind {
        case let .index(table, columns, _, _, _): return [(table, columns)]
        case let .view(table, columns, filter): return [(table, [self.table(table).key!.id] + columns + (filter.map { [$0] } ?? []))]
        case let .joinView(child, foreignKey, parent, parentColumn, _):
            return [(child, [self.table(child).key!.id, foreignKey]), (parent, [self.table(parent).key!.id, parentColumn])]
        case let .audit(table, column, log, ref, note): return [(table, [self.table(table).key!.id, column]), (log, [ref, note])]
        case let .counter(child, foreignKey, parent, counter): return [(child, [foreignKey]), (parent, [self.table(parent).key!.id, counter])]
        case let .sync(table, virtual, _, columns, targets): return [(table, [self.table(table).key!.id] + columns), (virtual, targets)]
        }
    }

    /// The table an index or trigger belongs to (dropped with it); nil for views.
    func owner(of object: Object) -> Int? {
        switch object.kind {
        case let .index(table, _, _, _, _), let .audit(table, _, _, _, _), let .sync(table, _, _, _, _): table
        case let .counter(child, _, _, _): child
        case .view, .joinView: nil
        }
    }

    /// Objects that use `table`.
    func objects(using table: Int) -> [Object] {
        objects.filter { dependencies(of: $0).contains { $0.table == table } }
    }

    /// Objects that use `column` of `table`.
    func objects(using table: Int, column: Int) -> [Object] {
        objects.filter { dependencies(of: $0).contains { $0.table == table && $0.columns.contains(column) } }
    }

    /// Tables whose foreign keys point at `table`.
    func referrers(of table: Int) -> [Table] {
        tables.filter { other in other.id != table && other.columns.contains { $0.reference == table } }
    }

    /// The external-content FTS tables that read `table`'s rows.
    func externalIndexes(of table: Int) -> [Table] {
        tables.filter { $0.kind == .virtual(.fts5External(content: table)) }
    }

    /// Columns that must keep their name, type and values: the key and the columns an
    /// external-content FTS table reads (SQLite never rewrites a virtual table's arguments).
    func pinnedColumns(of table: Int) -> Set<Int> {
        var pinned: Set<Int> = []
        for fts in externalIndexes(of: table) {
            for object in objects {
                if case let .sync(source, virtual, _, columns, _) = object.kind, source == table, virtual == fts.id {
                    pinned.formUnion(columns)
                    pinned.insert(self.table(table).key!.id)
                }
            }
        }
        return pinned
    }

    // MARK: - SQL

    /// The `CREATE TABLE` (or `CREATE VIRTUAL TABLE`) statement of `table`, under another name if given.
    func createSQL(_ table: Table, as name: String? = nil) -> String {
        let name = name ?? table.name
        switch table.kind {
        case .plain:
            return "CREATE TABLE \(name) (\n    " + table.columns.map { columnSQL($0, autoincrement: table.autoincrement) }.joined(separator: ",\n    ") + "\n)"
        case .link:
            let keys = table.columns.filter { $0.reference != nil && $0.notNull }.prefix(2).map(\.name)
            return "CREATE TABLE \(name) (\n    " + table.columns.map { columnSQL($0, autoincrement: false) }.joined(separator: ",\n    ")
                + ",\n    PRIMARY KEY (\(keys.joined(separator: ", ")))\n) WITHOUT ROWID"
        case .virtual(let virtual):
            let columns = table.columns.map(\.name).joined(separator: ", ")
            switch virtual {
            case .fts5External(let content):
                let source = self.table(content)
                return "CREATE VIRTUAL TABLE \(name) USING fts5(\(columns), content='\(source.name)', content_rowid='\(source.key!.name)')"
            case .fts5Contentless: return "CREATE VIRTUAL TABLE \(name) USING fts5(\(columns), content='')"
            case .fts5Trigram(let contentless):
                return "CREATE VIRTUAL TABLE \(name) USING fts5(\(columns)\(contentless ? ", content=''" : ""), tokenize=\"trigram\")"
            case .fts4: return "CREATE VIRTUAL TABLE \(name) USING fts4(\(columns), tokenize=porter)"
            case .rtree: return "CREATE VIRTUAL TABLE \(name) USING rtree(\(columns))"
            }
        }
    }

    /// One column definition, constraints included.
    func columnSQL(_ column: Column, autoincrement: Bool) -> String {
        var parts = [column.name]
        if !column.declaredType.isEmpty { parts.append(column.declaredType) }
        if column.isKey { parts.append(autoincrement ? "PRIMARY KEY AUTOINCREMENT" : "PRIMARY KEY") }
        if column.notNull { parts.append("NOT NULL") }
        if let value = column.defaultSQL { parts.append("DEFAULT " + value) }
        if column.unique { parts.append("UNIQUE") }
        if let allowed = column.allowed {
            parts.append("CHECK (\(column.name) IN (" + allowed.map { "'\($0)'" }.joined(separator: ", ") + "))")
        }
        if let parent = column.reference {
            let target = table(parent)
            parts.append("REFERENCES \(target.name)" + (column.namesTargetColumn ? "(\(target.key!.name))" : ""))
            if let action = column.onDelete { parts.append("ON DELETE " + action) }
        }
        return parts.joined(separator: " ")
    }

    /// The `CREATE INDEX`, `CREATE VIEW` or `CREATE TRIGGER` statement of `object`.
    func createSQL(_ object: Object) -> String {
        switch object.kind {
        case let .index(table, columns, lowered, partial, descending):
            let terms = columns.map { column in
                let name = self.name(table, column)
                return (lowered ? "lower(\(name))" : name) + (descending ? " DESC" : "")
            }
            let filter = partial ? " WHERE \(self.name(table, columns[0])) IS NOT NULL" : ""
            return "CREATE INDEX \(object.name) ON \(name(table)) (\(terms.joined(separator: ", ")))\(filter)"
        case let .view(table, columns, filter):
            let source = self.table(table)
            let list = ([source.key!.id] + columns).map { source.column($0)!.name }.joined(separator: ", ")
            let clause = filter.map { " WHERE \(source.column($0)!.name) IS NOT NULL" } ?? ""
            return "CREATE VIEW \(object.name) AS SELECT \(list) FROM \(source.name)\(clause)"
        case let .joinView(child, foreignKey, parent, parentColumn, alias):
            let c = self.table(child), p = self.table(parent)
            return "CREATE VIEW \(object.name) AS SELECT c.\(c.key!.name) AS item, p.\(p.column(parentColumn)!.name) AS \(alias) "
                + "FROM \(c.name) AS c LEFT JOIN \(p.name) AS p ON p.\(p.key!.name) = c.\(c.column(foreignKey)!.name)"
        case let .audit(table, column, log, ref, note):
            let t = self.table(table), l = self.table(log)
            let col = t.column(column)!.name
            return "CREATE TRIGGER \(object.name) AFTER UPDATE OF \(col) ON \(t.name) BEGIN\n"
                + "    INSERT INTO \(l.name) (\(l.column(ref)!.name), \(l.column(note)!.name)) "
                + "VALUES (new.\(t.key!.name), '\(col): ' || coalesce(old.\(col), 'null') || ' -> ' || coalesce(new.\(col), 'null'));\nEND"
        case let .counter(child, foreignKey, parent, counter):
            let c = self.table(child), p = self.table(parent)
            let fk = c.column(foreignKey)!.name, n = p.column(counter)!.name
            return "CREATE TRIGGER \(object.name) AFTER INSERT ON \(c.name) WHEN new.\(fk) IS NOT NULL BEGIN\n"
                + "    UPDATE \(p.name) SET \(n) = coalesce(\(n), 0) + 1 WHERE \(p.key!.name) = new.\(fk);\nEND"
        case let .sync(table, virtual, event, columns, targets):
            let t = self.table(table), v = self.table(virtual)
            let targetList = targets.map { v.column($0)!.name }
            func values(_ row: String) -> String { ([t.key!] + columns.map { t.column($0)! }).map { "\(row).\($0.name)" }.joined(separator: ", ") }
            let insertNew: String
            switch v.kind {
            case .virtual(.rtree):
                // An R*Tree row from the source row: its key, and boxes derived from it.
                let c = columns.first.map { "coalesce(length(new.\(t.column($0)!.name)), 0)" } ?? "0"
                insertNew = "INSERT OR REPLACE INTO \(v.name) VALUES (new.\(t.key!.name), new.\(t.key!.name), new.\(t.key!.name) + 0.5, \(c), \(c) + 1);"
            case .virtual(.fts4):
                insertNew = "INSERT INTO \(v.name) (docid, \(targetList.joined(separator: ", "))) VALUES (\(values("new")));"
            default:
                insertNew = "INSERT INTO \(v.name) (rowid, \(targetList.joined(separator: ", "))) VALUES (\(values("new")));"
            }
            let deleteOld = "INSERT INTO \(v.name) (\(v.name), rowid, \(targetList.joined(separator: ", "))) VALUES ('delete', \(values("old")));"
            let body: String
            switch event {
            case .insert: body = insertNew
            case .delete: body = deleteOld
            case .update: body = deleteOld + "\n    " + insertNew
            }
            return "CREATE TRIGGER \(object.name) AFTER \(event.rawValue) ON \(t.name) BEGIN\n    \(body)\nEND"
        }
    }

    /// The statement that drops `object`.
    func dropSQL(_ object: Object) -> String {
        switch object.kind {
        case .index: "DROP INDEX \(object.name)"
        case .view, .joinView: "DROP VIEW \(object.name)"
        case .audit, .counter, .sync: "DROP TRIGGER \(object.name)"
        }
    }
}
