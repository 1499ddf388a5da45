/// The differences between two schemas, in words, such as
/// `table history: column last_read: NOT NULL in migrations, nullable in schema.sql`.
struct SchemaDiff {
    /// What to call each side in the messages ("migrations", "schema.sql", "the file", ...).
    var leftName: String
    var rightName: String
    /// Where an object was defined on each side, for messages: `kind name` to "file line N".
    var leftLocations: [String: String] = [:]
    var rightLocations: [String: String] = [:]
    /// Whether to quote the two definitions of an index, view or trigger that differ.
    /// True for bundle checks (read by the app's developer); false for anything that goes
    /// to a client, which never gets SQL text.
    var quotesDefinitions = false

    /// Every difference between `left` and `right`; empty when they are the same schema.
    func differences(_ left: NormalizedSchema, _ right: NormalizedSchema) -> [String] {
        var out: [String] = []
        for name in Set(left.tables.keys).union(right.tables.keys).sorted() {
            switch (left.tables[name], right.tables[name]) {
            case (let l?, let r?): out += tableDifferences(name, l, r)
            case (_?, nil): out.append(onlyIn("table", name, leftSide: true))
            case (nil, _?): out.append(onlyIn("table", name, leftSide: false))
            default: break
            }
        }
        for (kind, l, r) in [
            ("index", left.indexes, right.indexes), ("view", left.views, right.views),
            ("trigger", left.triggers, right.triggers),
        ] {
            for name in Set(l.keys).union(r.keys).sorted() {
                switch (l[name], r[name]) {
                case (let a?, let b?) where a != b:
                    out.append(
                        "\(kind) \(name)\(where_(kind, name)): defined differently"
                            + (quotesDefinitions ? ": \(leftName) has «\(a)», \(rightName) has «\(b)»" : " in \(leftName) and \(rightName)"))
                case (_?, nil): out.append(onlyIn(kind, name, leftSide: true))
                case (nil, _?): out.append(onlyIn(kind, name, leftSide: false))
                default: break
                }
            }
        }
        return out
    }

    private func where_(_ kind: String, _ name: String) -> String {
        let key = "\(kind) \(name)"
        let places = [leftLocations[key].map { "\(leftName): \($0)" }, rightLocations[key].map { "\(rightName): \($0)" }]
            .compactMap { $0 }
        return places.isEmpty ? "" : " (" + places.joined(separator: "; ") + ")"
    }

    private func onlyIn(_ kind: String, _ name: String, leftSide: Bool) -> String {
        let key = "\(kind) \(name)"
        let location = (leftSide ? leftLocations[key] : rightLocations[key]).map { ", \($0)" } ?? ""
        return "\(kind) \(name): only in \(leftSide ? leftName : rightName)\(location), missing from \(leftSide ? rightName : leftName)"
    }

    private func tableDifferences(_ name: String, _ l: NormalizedSchema.Table, _ r: NormalizedSchema.Table) -> [String] {
        var out: [String] = []
        let prefix = "table \(name)\(where_("table", name))"
        let leftColumns = Dictionary(l.columns.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let rightColumns = Dictionary(r.columns.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for column in l.columns where rightColumns[column.name] == nil {
            out.append("\(prefix): column \(column.name) only in \(leftName)")
        }
        for column in r.columns where leftColumns[column.name] == nil {
            out.append("\(prefix): column \(column.name) only in \(rightName)")
        }
        for column in l.columns {
            guard let other = rightColumns[column.name], other != column else { continue }
            var facts: [String] = []
            if column.type != other.type { facts.append("type \(show(column.type)) vs \(show(other.type))") }
            if column.notNull != other.notNull {
                facts.append("\(column.notNull ? "NOT NULL" : "nullable") in \(leftName), \(other.notNull ? "NOT NULL" : "nullable") in \(rightName)")
            }
            if column.defaultValue != other.defaultValue {
                facts.append("default \(column.defaultValue ?? "none") in \(leftName), \(other.defaultValue ?? "none") in \(rightName)")
            }
            if column.primaryKeyPosition != other.primaryKeyPosition { facts.append("primary key membership differs") }
            if (column.hidden == 0) != (other.hidden == 0) {
                facts.append("generated in one side only")
            } else if column.hidden != other.hidden {
                facts.append("\(column.hidden == 3 ? "STORED" : "VIRTUAL") in \(leftName), \(other.hidden == 3 ? "STORED" : "VIRTUAL") in \(rightName)")
            }
            if column.generated != other.generated {
                facts.append("generated as (\(column.generated ?? "")) in \(leftName), as (\(other.generated ?? "")) in \(rightName)")
            }
            if column.collation != other.collation {
                facts.append("collate \(column.collation) in \(leftName), collate \(other.collation) in \(rightName)")
            }
            if column.conflicts != other.conflicts {
                let show = { (list: [String]) in list.isEmpty ? "no ON CONFLICT" : list.joined(separator: ", ") }
                facts.append("\(show(column.conflicts)) in \(leftName), \(show(other.conflicts)) in \(rightName)")
            }
            out.append("\(prefix): column \(column.name): " + facts.joined(separator: "; "))
        }
        let sharedOrderLeft = l.columns.map(\.name).filter { rightColumns[$0] != nil }
        let sharedOrderRight = r.columns.map(\.name).filter { leftColumns[$0] != nil }
        if sharedOrderLeft != sharedOrderRight {
            out.append("\(prefix): columns in a different order: (\(sharedOrderLeft.joined(separator: ", "))) in \(leftName), (\(sharedOrderRight.joined(separator: ", "))) in \(rightName)")
        }
        out += listDifferences(prefix, "foreign key", l.foreignKeys.map(\.description), r.foreignKeys.map(\.description))
        out += listDifferences(prefix, "check", l.checks, r.checks)
        out += listDifferences(prefix, "unique", l.uniques, r.uniques)
        out += listDifferences(prefix, "option", l.options, r.options)
        out += listDifferences(prefix, "constraint", l.conflicts, r.conflicts)
        return out
    }

    private func listDifferences(_ prefix: String, _ what: String, _ l: [String], _ r: [String]) -> [String] {
        let left = Set(l), right = Set(r)
        return left.subtracting(right).sorted().map { "\(prefix): \(what) \($0) only in \(leftName)" }
            + right.subtracting(left).sorted().map { "\(prefix): \(what) \($0) only in \(rightName)" }
    }

    private func show(_ type: String) -> String { type.isEmpty ? "(none)" : type }
}
