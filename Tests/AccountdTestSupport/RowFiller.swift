import AccountdProtocol
import Foundation
import GRDB

/// Test support: fills every user table of an arbitrary SQLite schema with plausible,
/// deterministic rows, so that migration tests have data to carry forward.
///
/// - Tables named `sqlite_%` or `accountd_%`, views, virtual tables and their shadow
///   tables are skipped.
/// - Tables are filled parents first (foreign-key order). A foreign-key column takes a
///   key of an existing (or, for self references and cycles, a planned) parent row;
///   child row `i` references parent row `i % parentCount`, so the first row of every
///   parent table gets at least one child row.
/// - Values follow the declared type affinity, honour NOT NULL, UNIQUE (also composite
///   unique indexes), integer primary keys, simple `CHECK (col IN (...))` lists and
///   `json_valid(col)` checks; hidden and generated columns are never inserted into.
/// - A row that still fails is retried with other values, then with every column that
///   has a DEFAULT omitted, then with 0/1/'' fallbacks. A table that gets no row at all
///   makes `fill` throw, naming the table and the last SQLite error.
/// - The same schema, contents and seed give the same rows (values written by the
///   schema's own triggers, such as `strftime('now')`, are outside the filler's control).
///
/// The connection should have foreign key enforcement off, since cycles can only be
/// closed by references to rows that are inserted later.
public enum RowFiller {
    struct FillError: Error, CustomStringConvertible {
        var table: String
        var lastError: String
        var description: String {
            "RowFiller: no row could be inserted into table \(table): \(lastError)"
        }
    }

    /// Inserts up to `rowsPerTable` rows into every user table and returns, per table,
    /// how many rows were inserted.
    public static func fill(_ db: Database, rowsPerTable: Int, seed: UInt64) throws -> [String: Int] {
        let tableNames = try TableDump.userTables(db)
        var tables: [String: TableInfo] = [:]
        for name in tableNames {
            tables[name] = try tableInfo(db, name)
        }
        let allTableNames = try Set(String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
        let allLowerToName = Dictionary(allTableNames.map { ($0.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })

        // Resolve foreign keys: parent table name as stored, parent key columns.
        for name in tableNames {
            var info = tables[name]!
            for i in info.foreignKeys.indices {
                let fk = info.foreignKeys[i]
                guard let parent = allLowerToName[fk.parentAsWritten.lowercased()] else { continue }
                var to = fk.toColumns
                if to.contains(where: { $0 == nil }) {
                    let parentPK: [String]
                    if let p = tables[parent] {
                        parentPK = p.primaryKey
                    } else {
                        parentPK = try primaryKeyColumns(db, parent)
                    }
                    guard parentPK.count == fk.fromColumns.count else { continue }
                    to = parentPK.map { Optional($0) }
                }
                guard to.count == fk.fromColumns.count else { continue }
                info.foreignKeys[i].parent = parent
                info.foreignKeys[i].resolvedTo = to.map { $0! }
            }
            tables[name] = info
        }

        let order = fillOrder(tableNames, tables: tables)

        // Parent key columns referenced by some foreign key, per parent table.
        var referenced: [String: Set<String>] = [:]
        for name in tableNames {
            for fk in tables[name]!.foreignKeys {
                guard let parent = fk.parent, tables[parent] != nil else { continue }
                for c in fk.resolvedTo { referenced[parent, default: []].insert(c.lowercased()) }
            }
        }

        // Plan key values (integer primary keys, referenced columns) before filling
        // anything, so that self references and cycles can point at rows to come.
        var planned: [String: [[String: DatabaseValue]]] = [:]
        for name in order {
            var rng = SplitMix64(seed: seed ^ fnv1a(name) ^ 0x5EED_0F_4B_E75)
            planned[name] = try planKeys(
                db, tables[name]!, referenced: referenced[name] ?? [],
                rows: rowsPerTable, rng: &rng)
        }

        var counts: [String: Int] = [:]
        var filled: Set<String> = []
        for name in order {
            let info = tables[name]!
            var rng = SplitMix64(seed: seed ^ fnv1a(name))
            // Candidate parent keys per foreign key.
            var candidates: [[[DatabaseValue]]] = []
            for fk in info.foreignKeys {
                guard let parent = fk.parent else { candidates.append([]); continue }
                // A reference to a column the parent lacks (schemas drift) has no candidates.
                var list = (try? existingTuples(db, parent, fk.resolvedTo)) ?? []
                if tables[parent] != nil, !filled.contains(parent) {
                    // Cycle or self reference: the parent's planned keys.
                    for row in planned[parent] ?? [] {
                        let tuple = fk.resolvedTo.map { row[$0.lowercased()] ?? .null }
                        if !tuple.contains(where: { $0.isNull }) { list.append(tuple) }
                    }
                }
                candidates.append(list)
            }
            let inserted = try fillTable(
                db, info, rows: rowsPerTable, planned: planned[name] ?? [],
                candidates: candidates, rng: &rng)
            counts[name] = inserted
            filled.insert(name)
        }
        return counts
    }

    // MARK: - Schema

    fileprivate enum Kind { case integer, text, real, blob, numeric, none, boolean, datetime }

    fileprivate struct ColumnInfo {
        var name: String
        var declaredType: String
        var notNull: Bool
        var defaultSQL: String?
        var kind: Kind
        var allowed: [DatabaseValue]?
        var boolish: Bool
        var json: Bool
        var hasDefault: Bool { defaultSQL != nil }
        /// A NULL-able column with a non-NULL default: the application never writes
        /// NULL there, and later migrations may assume so.
        var mayBeNull: Bool {
            guard !notNull else { return false }
            guard let d = defaultSQL?.trimmingCharacters(in: .whitespaces) else { return true }
            return d.uppercased() == "NULL"
        }
    }

    fileprivate struct ForeignKeyInfo {
        var parentAsWritten: String
        var fromColumns: [String]
        var toColumns: [String?]
        var parent: String? = nil
        var resolvedTo: [String] = []
    }

    fileprivate struct TableInfo {
        var name: String
        var columns: [ColumnInfo]          // insertable columns, table order
        var primaryKey: [String]
        var integerKey: String?            // single-column primary key with integer affinity
        var withoutRowid: Bool
        var foreignKeys: [ForeignKeyInfo]
        var uniques: [[Int]]               // indexes into `columns`
    }

    private static func quote(_ identifier: String) -> String { TableDump.quote(identifier) }

    private static func primaryKeyColumns(_ db: Database, _ table: String) throws -> [String] {
        let rows = try Row.fetchAll(db, sql: "PRAGMA main.table_info(\(quote(table)))")
        return rows.filter { ($0["pk"] as Int) > 0 }
            .sorted { ($0["pk"] as Int) < ($1["pk"] as Int) }
            .map { $0["name"] as String }
    }

    private static func kind(of declared: String) -> Kind {
        let t = declared.uppercased()
        if t.isEmpty || t == "ANY" { return .none }
        if t.contains("BOOL") { return .boolean }
        if t.contains("INT") { return .integer }
        if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") { return .text }
        if t.contains("BLOB") { return .blob }
        if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") { return .real }
        if t.contains("LONG") { return .integer }   // Android-style "LONG" (NUMERIC affinity)
        if t.contains("DATE") || t.contains("TIME") { return .datetime }
        return .numeric
    }

    private static func looksBoolish(_ name: String) -> Bool {
        let n = name.lowercased()
        if n.hasPrefix("is_") || n.hasPrefix("has_") || n.hasSuffix("_flag") { return true }
        return ["favorite", "favourite", "pinned", "read", "bookmark", "bookmarked",
                "archived", "deleted", "enabled", "disabled", "hidden", "starred"].contains(n)
    }

    private static func tableInfo(_ db: Database, _ name: String) throws -> TableInfo {
        let sql = try String.fetchOne(
            db, sql: "SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = ?",
            arguments: [name]) ?? ""
        let checks = CheckParser.parse(sql)
        let withoutRowid = sql.uppercased().range(
            of: #"WITHOUT\s+ROWID"#, options: .regularExpression) != nil

        var columns: [ColumnInfo] = []
        var pk: [(Int, String)] = []
        var pkTypes: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "PRAGMA main.table_xinfo(\(quote(name)))") {
            let colName: String = row["name"]
            let type: String = row["type"] ?? ""
            let hidden: Int = row["hidden"]
            let pkIndex: Int = row["pk"]
            if pkIndex > 0 { pk.append((pkIndex, colName)); pkTypes[colName] = type }
            guard hidden == 0 else { continue }   // hidden or generated
            var info = ColumnInfo(
                name: colName, declaredType: type, notNull: (row["notnull"] as Int) != 0,
                defaultSQL: row["dflt_value"], kind: kind(of: type), allowed: nil,
                boolish: false, json: false)
            let lower = colName.lowercased()
            if let allowed = checks.allowed[lower], !allowed.isEmpty {
                info.allowed = allowed
                let asInts = Set(allowed.compactMap { v -> Int64? in
                    if case .int64(let i) = v.storage { return i } else { return nil } })
                if asInts.count == allowed.count, asInts.isSubset(of: [0, 1]) { info.boolish = true }
            }
            if info.kind == .boolean || (looksBoolish(colName) && [.integer, .numeric, .none, .boolean].contains(info.kind)) {
                info.boolish = true
            }
            if checks.json.contains(lower) { info.json = true }
            if let d = info.defaultSQL?.trimmingCharacters(in: .whitespaces),
               d.hasPrefix("'{") || d.hasPrefix("'[") || d.hasPrefix("\"{") || d.hasPrefix("\"[") {
                info.json = true
            }
            columns.append(info)
        }
        let primaryKey = pk.sorted { $0.0 < $1.0 }.map { $0.1 }
        var integerKey: String? = nil
        if primaryKey.count == 1, kind(of: pkTypes[primaryKey[0]] ?? "") == .integer,
           columns.contains(where: { $0.name == primaryKey[0] }) {
            integerKey = primaryKey[0]
        }

        // Foreign keys, grouped by id.
        var fkByID: [Int: ForeignKeyInfo] = [:]
        for row in try Row.fetchAll(db, sql: "PRAGMA main.foreign_key_list(\(quote(name)))") {
            let id: Int = row["id"]
            let parent: String = row["table"]
            let from: String = row["from"]
            let to: String? = row["to"]
            var fk = fkByID[id] ?? ForeignKeyInfo(parentAsWritten: parent, fromColumns: [], toColumns: [])
            fk.fromColumns.append(from)
            fk.toColumns.append(to)
            fkByID[id] = fk
        }
        let fks = fkByID.keys.sorted().map { fkByID[$0]! }
            .filter { fk in fk.fromColumns.allSatisfy { c in columns.contains { $0.name.lowercased() == c.lowercased() } } }

        // Unique indexes (including primary key and UNIQUE constraints) over plain columns.
        var uniques: [[Int]] = []
        for idx in try Row.fetchAll(db, sql: "PRAGMA main.index_list(\(quote(name)))") {
            guard (idx["unique"] as Int) != 0 else { continue }
            let idxName: String = idx["name"]
            var cols: [Int] = []
            var plain = true
            for c in try Row.fetchAll(db, sql: "PRAGMA main.index_xinfo(\(quote(idxName)))") {
                guard (c["key"] as Int) != 0 else { continue }
                let cid: Int = c["cid"]
                let cname: String? = c["name"]
                guard cid >= 0, let cname,
                      let pos = columns.firstIndex(where: { $0.name == cname }) else { plain = false; break }
                cols.append(pos)
            }
            if plain && !cols.isEmpty { uniques.append(cols) }
        }
        if let k = integerKey, let pos = columns.firstIndex(where: { $0.name == k }),
           !uniques.contains([pos]) {
            uniques.append([pos])
        }
        return TableInfo(
            name: name, columns: columns, primaryKey: primaryKey, integerKey: integerKey,
            withoutRowid: withoutRowid, foreignKeys: fks, uniques: uniques)
    }

    /// Parents first; among tables that are ready, by name. A cycle is broken at the
    /// table with the fewest unfilled parents.
    private static func fillOrder(_ names: [String], tables: [String: TableInfo]) -> [String] {
        var parents: [String: Set<String>] = [:]
        for name in names {
            var set: Set<String> = []
            for fk in tables[name]!.foreignKeys {
                if let p = fk.parent, tables[p] != nil, p != name { set.insert(p) }
            }
            parents[name] = set
        }
        var done: Set<String> = []
        var order: [String] = []
        while order.count < names.count {
            let remaining = names.filter { !done.contains($0) }
            let next = remaining.first { parents[$0]!.isSubset(of: done) }
                ?? remaining.min { a, b in
                    let ca = parents[a]!.subtracting(done).count
                    let cb = parents[b]!.subtracting(done).count
                    return ca != cb ? ca < cb : a < b
                }!
            order.append(next)
            done.insert(next)
        }
        return order
    }

    private static func existingTuples(_ db: Database, _ table: String, _ columns: [String]) throws -> [[DatabaseValue]] {
        let cols = columns.map(quote).joined(separator: ", ")
        let nonNull = columns.map { "\(quote($0)) IS NOT NULL" }.joined(separator: " AND ")
        let base = "SELECT \(cols) FROM main.\(quote(table)) WHERE \(nonNull)"
        let rows: [Row]
        do {
            rows = try Row.fetchAll(db, sql: base + " ORDER BY rowid")
        } catch {
            rows = try Row.fetchAll(db, sql: base)   // WITHOUT ROWID
        }
        return rows.map { Array($0.databaseValues) }
    }

    // MARK: - Planning keys

    private static func planKeys(
        _ db: Database, _ table: TableInfo, referenced: Set<String>, rows: Int,
        rng: inout SplitMix64
    ) throws -> [[String: DatabaseValue]] {
        guard rows > 0 else { return [] }
        let fkColumns = Set(table.foreignKeys.flatMap { $0.fromColumns.map { $0.lowercased() } })
        var plannedRows = Array(repeating: [String: DatabaseValue](), count: rows)
        if let key = table.integerKey, !fkColumns.contains(key.lowercased()) {
            let maxExisting = try Int64.fetchOne(
                db, sql: "SELECT max(\(quote(key))) FROM main.\(quote(table.name)) WHERE typeof(\(quote(key))) = 'integer'") ?? 0
            let start = max(maxExisting, 0) &+ 1
            for i in 0..<rows { plannedRows[i][key.lowercased()] = (start &+ Int64(i)).databaseValue }
        }
        for col in table.columns {
            let lower = col.name.lowercased()
            guard referenced.contains(lower), plannedRows[0][lower] == nil, !fkColumns.contains(lower) else { continue }
            var seen = Set(try DatabaseValue.fetchAll(
                db, sql: "SELECT \(quote(col.name)) FROM main.\(quote(table.name))").map(keyString))
            for i in 0..<rows {
                var value = ValueMaker.value(col, row: i, rng: &rng, allowNull: false)
                var tries = 0
                while seen.contains(keyString(value)) && tries < 40 {
                    tries += 1
                    value = ValueMaker.value(col, row: i, rng: &rng, allowNull: false, salt: tries)
                }
                seen.insert(keyString(value))
                plannedRows[i][lower] = value
            }
        }
        return plannedRows
    }

    // MARK: - Filling one table

    private static func fillTable(
        _ db: Database, _ table: TableInfo, rows: Int, planned: [[String: DatabaseValue]],
        candidates: [[[DatabaseValue]]], rng: inout SplitMix64
    ) throws -> Int {
        guard rows > 0 else { return 0 }
        let columns = table.columns
        let lowerIndex = Dictionary(columns.enumerated().map { ($1.name.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
        // Which foreign key (first wins) sets each column.
        var fkOf = Array<(fk: Int, pos: Int)?>(repeating: nil, count: columns.count)
        for (f, fk) in table.foreignKeys.enumerated() where !candidates[f].isEmpty {
            for (p, c) in fk.fromColumns.enumerated() {
                if let i = lowerIndex[c.lowercased()], fkOf[i] == nil { fkOf[i] = (f, p) }
            }
        }
        var seen: [Set<String>] = []
        for u in table.uniques {
            let cols = u.map { quote(columns[$0].name) }.joined(separator: ", ")
            let existing = try Row.fetchAll(db, sql: "SELECT \(cols) FROM main.\(quote(table.name))")
            seen.append(Set(existing.compactMap { tupleKey(Array($0.databaseValues)) }))
        }

        var inserted = 0
        var lastError = "no attempt"
        let maxAttempts = 10
        for i in 0..<rows {
            let plannedRow = i < planned.count ? planned[i] : [:]
            attempts: for attempt in 0..<maxAttempts {
                // 0..<4 normal values, 4..<6 defaults omitted, 6..<10 fallbacks.
                let omitDefaults = attempt >= 4
                let fallback = attempt >= 6 ? attempt - 6 : nil
                var values = Array<DatabaseValue?>(repeating: nil, count: columns.count)
                var fkShift = Array(repeating: attempt, count: table.foreignKeys.count)
                var fkNull = Array(repeating: false, count: table.foreignKeys.count)
                for (f, fk) in table.foreignKeys.enumerated() {
                    let nullable = fk.fromColumns.allSatisfy { c in
                        lowerIndex[c.lowercased()].map { columns[$0].mayBeNull } ?? false }
                    if nullable && i > 0 && rng.chance(0.15) { fkNull[f] = true }
                    if nullable && fallback == 3 { fkNull[f] = true }
                }

                func assign(_ c: Int, salt: Int) {
                    let col = columns[c]
                    let lower = col.name.lowercased()
                    if let link = fkOf[c] {
                        if fkNull[link.fk] { values[c] = .null; return }
                        let list = candidates[link.fk]
                        values[c] = list[(i + fkShift[link.fk]) % list.count][link.pos]
                        return
                    }
                    if attempt < 8, let plannedValue = plannedRow[lower] { values[c] = plannedValue; return }
                    if col.hasDefault && omitDefaults { values[c] = nil; return }
                    if let fb = fallback {
                        values[c] = ValueMaker.fallback(col, variant: fb)
                        return
                    }
                    values[c] = ValueMaker.value(col, row: i, rng: &rng, allowNull: i > 0, salt: salt)
                }
                for c in columns.indices { assign(c, salt: attempt) }
                if attempt >= 8, let key = table.integerKey, let c = lowerIndex[key.lowercased()], fkOf[c] == nil {
                    values[c] = nil   // let SQLite choose the key
                }

                // Redraw values that collide with a known unique key.
                var redraws = 0
                redraw: while redraws < 40 {
                    var clash: [Int]? = nil
                    for (u, cols) in table.uniques.enumerated() {
                        let tuple = cols.map { values[$0] }
                        guard tuple.allSatisfy({ $0 != nil }) else { continue }
                        if let k = tupleKey(tuple.map { $0! }), seen[u].contains(k) { clash = cols; break }
                    }
                    guard let cols = clash else { break redraw }
                    redraws += 1
                    var changed = false
                    for c in cols {
                        if let f = fkOf[c]?.fk {
                            if !fkNull[f] && candidates[f].count > 1 {
                                fkShift[f] += 1
                                for (c2, link) in fkOf.enumerated() where link?.fk == f { assign(c2, salt: attempt) }
                                changed = true
                            }
                            continue
                        }
                        let lower = columns[c].name.lowercased()
                        if plannedRow[lower] != nil && attempt < 8 { continue }
                        if values[c] == nil { continue }
                        values[c] = ValueMaker.value(columns[c], row: i, rng: &rng, allowNull: false, salt: attempt * 100 + redraws)
                        changed = true
                    }
                    if !changed { break redraw }
                }

                let used = columns.indices.filter { values[$0] != nil }
                let sql: String
                if used.isEmpty {
                    sql = "INSERT OR ABORT INTO main.\(quote(table.name)) DEFAULT VALUES"
                } else {
                    let names = used.map { quote(columns[$0].name) }.joined(separator: ", ")
                    let marks = Array(repeating: "?", count: used.count).joined(separator: ", ")
                    sql = "INSERT OR ABORT INTO main.\(quote(table.name)) (\(names)) VALUES (\(marks))"
                }
                do {
                    try db.execute(sql: sql, arguments: StatementArguments(used.map { values[$0]! }))
                } catch let error as DatabaseError {
                    lastError = "\(error.resultCode): \(error.message ?? "\(error)")"
                    continue attempts
                }
                inserted += 1
                for (u, cols) in table.uniques.enumerated() {
                    let tuple = cols.map { values[$0] }
                    if tuple.allSatisfy({ $0 != nil }), let k = tupleKey(tuple.map { $0! }) { seen[u].insert(k) }
                }
                break attempts
            }
        }
        if inserted == 0 {
            throw FillError(table: table.name, lastError: lastError)
        }
        return inserted
    }

    // MARK: - Keys

    private static func keyString(_ v: DatabaseValue) -> String {
        switch v.storage {
        case .null: return "n"
        case .int64(let i): return "i\(i)"
        case .double(let d): return d == d.rounded() && abs(d) < 9e15 ? "i\(Int64(d))" : "r\(d)"
        case .string(let s): return "t\(s)"
        case .blob(let b): return "b" + b.map { String(format: "%02x", $0) }.joined()
        }
    }

    /// nil when the tuple holds a NULL (NULLs never clash in a unique index).
    private static func tupleKey(_ values: [DatabaseValue]) -> String? {
        if values.contains(where: { $0.isNull }) { return nil }
        return values.map(keyString).joined(separator: "\u{1F}")
    }

    private static func fnv1a(_ s: String) -> UInt64 {
        var h: UInt64 = 0xcbf29ce484222325
        for b in s.utf8 { h = (h ^ UInt64(b)) &* 0x100000001b3 }
        return h
    }

    // MARK: - PRNG

    fileprivate typealias SplitMix64 = SeededRandom

    // MARK: - Values

    private enum ValueMaker {
        static let words = [
            "alpha", "Bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
            "café", "naïve", "Zürich", "résumé", "日本語", "中文测试", "한국어", "Ελληνικά",
            "русский", "עברית", "العربية", "emoji 🚀", "✨ sparkle", "🙂", "O'Brien",
            "\"quoted\"", "back\\slash", "tab\there", "line\nbreak", "  padded  ",
            "percent%_under", "a,b;c", "Ω≈ç√∫", "ß", "ﬁ ligature", "e\u{301}", "x",
        ]
        static let hosts = ["example.com", "example.org", "mirror.example.net", "ex.test"]

        static func value(_ col: ColumnInfo, row: Int, rng: inout SplitMix64, allowNull: Bool, salt: Int = 0) -> DatabaseValue {
            if let allowed = col.allowed {
                let options = col.notNull ? allowed.filter { !$0.isNull } : allowed
                if !options.isEmpty { return rng.pick(options) }
            }
            if allowNull && col.mayBeNull && rng.chance(0.12) { return .null }
            if col.boolish { return Int64(rng.int(2)).databaseValue }
            let name = col.name.lowercased()
            switch col.kind {
            case .boolean:
                return Int64(rng.int(2)).databaseValue
            case .integer:
                return integer(name, rng: &rng, salt: salt).databaseValue
            case .real:
                return real(rng: &rng).databaseValue
            case .text:
                return text(col, row: row, rng: &rng, salt: salt).databaseValue
            case .blob:
                return blob(rng: &rng).databaseValue
            case .datetime:
                if rng.chance(0.5) { return integer("timestamp", rng: &rng, salt: salt).databaseValue }
                // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm), UTC.
                let t = 1_600_000_000 + rng.int(200_000_000)
                let z = t / 86_400 + 719_468
                let era = z / 146_097
                let doe = z - era * 146_097
                let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
                let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
                let mp = (5 * doy + 2) / 153
                let day = doy - (153 * mp + 2) / 5 + 1
                let month = mp < 10 ? mp + 3 : mp - 9
                let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
                let s = t % 86_400
                return String(format: "%04d-%02d-%02d %02d:%02d:%02d", year, month, day, s / 3600, s / 60 % 60, s % 60).databaseValue
            case .numeric, .none:
                switch rng.int(col.kind == .none ? 5 : 4) {
                case 0, 1: return integer(name, rng: &rng, salt: salt).databaseValue
                case 2: return real(rng: &rng).databaseValue
                case 3: return text(col, row: row, rng: &rng, salt: salt).databaseValue
                default: return blob(rng: &rng).databaseValue
                }
            }
        }

        static func fallback(_ col: ColumnInfo, variant: Int) -> DatabaseValue {
            if let allowed = col.allowed, let first = allowed.first(where: { !$0.isNull }) {
                return allowed.count > 1 && variant % 2 == 1 ? allowed[1] : first
            }
            if variant == 3 && !col.notNull { return .null }
            let one = variant % 2 == 1
            switch col.kind {
            case .integer, .boolean, .numeric, .none, .datetime:
                return Int64(one ? 1 : 0).databaseValue
            case .real:
                return (one ? 1.0 : 0.0).databaseValue
            case .text:
                if col.json { return (one ? "[]" : "{}").databaseValue }
                return (one ? "a" : "").databaseValue
            case .blob:
                return Data([one ? 1 : 0]).databaseValue
            }
        }

        static func integer(_ name: String, rng: inout SplitMix64, salt: Int) -> Int64 {
            let timeish = name == "timestamp" || name.hasSuffix("_ts") || name.hasSuffix("_at")
                || name.hasPrefix("date_") || name.hasSuffix("_date") || name.hasPrefix("time_")
                || name.hasSuffix("_time") || name.hasSuffix("_modified") || name.hasSuffix("_update")
                || name == "last_read" || name == "created" || name == "updated"
            if timeish {
                if rng.chance(0.1) { return 0 }
                return rng.int(in: 1_500_000_000_000...1_800_000_000_000) / (rng.chance(0.5) ? 1000 : 1)
            }
            if salt > 5 { return rng.int(in: 1_000...9_000_000_000) }
            switch rng.int(20) {
            case 0..<10: return Int64(rng.int(10))
            case 10..<16: return rng.int(in: 10...100_000)
            case 16..<18: return rng.int(in: 100_000...Int64(Int32.max))
            case 18: return -rng.int(in: 1...1000)
            default: return rng.int(in: Int64(Int32.max)...Int64.max / 2)
            }
        }

        static func real(rng: inout SplitMix64) -> Double {
            switch rng.int(4) {
            case 0: return Double(rng.int(21)) / 2            // 0, 0.5, ... 10
            case 1: return Double(rng.int(100_000)) / 100
            case 2: return -Double(rng.int(1000)) / 8
            default: return Double(rng.next() >> 11) / Double(1 << 53) * 1e6
            }
        }

        static func blob(rng: inout SplitMix64) -> Data {
            let n = 1 + rng.int(16)
            return Data((0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }

        static func jsonString(_ s: String) -> String { JSONValue.string(s).serialized() }

        static func text(_ col: ColumnInfo, row: Int, rng: inout SplitMix64, salt: Int) -> String {
            let name = col.name.lowercased()
            let n = rng.int(10_000)
            let suffix = salt > 5 ? "-\(row)-\(salt)" : ""
            if col.json {
                if col.defaultSQL?.contains("[") == true {
                    return "[\(jsonString(rng.pick(words))),\(n)]"
                }
                return "{\"name\":\(jsonString(rng.pick(words) + suffix)),\"n\":\(n),\"ok\":\(rng.chance(0.5))}"
            }
            if name.contains("url") || name.contains("link") || name.contains("website") {
                return "https://\(rng.pick(hosts))/\(rng.pick(["manga", "item", "a/b", "repo"]))/\(n)\(suffix)"
            }
            if name.contains("email") {
                return "user\(n)\(suffix)@\(rng.pick(hosts))"
            }
            if name.contains("hash") || name.contains("fingerprint") || name.contains("token")
                || name.contains("secret") || name == "uid" || name.hasSuffix("_uid") || name == "id" {
                return (0..<16).map { _ in String(format: "%02x", rng.int(256)) }.joined() + suffix
            }
            if name.contains("path") || name.contains("cwd") || name.contains("dir") {
                return "/home/\(rng.pick(["ann", "bob", "zoë"]))/\(rng.pick(["src", "docs", "日本"]))/\(n)\(suffix)"
            }
            let count = 1 + rng.int(3)
            var parts = (0..<count).map { _ in rng.pick(words) }
            if rng.chance(0.5) || salt > 0 { parts.append(String(n)) }
            return parts.joined(separator: " ") + suffix
        }
    }

    // MARK: - CHECK parsing

    /// Scans CREATE TABLE text for `col IN (literal, ...)` and `json_valid(col)`.
    private enum CheckParser {
        enum Token: Equatable {
            case word(String)          // bare identifier or keyword
            case quoted(String)        // "x", `x`, [x]
            case string(String)        // 'x'
            case number(String)
            case blob(String)          // X'..' hex
            case punct(Character)
        }

        struct Result {
            var allowed: [String: [DatabaseValue]] = [:]
            var json: Set<String> = []
        }

        static func parse(_ sql: String) -> Result {
            let tokens = tokenize(sql)
            var result = Result()
            var i = 0
            while i < tokens.count {
                defer { i += 1 }
                if case .word(let w) = tokens[i], w.uppercased() == "JSON_VALID",
                   i + 3 < tokens.count, tokens[i + 1] == .punct("("), tokens[i + 3] == .punct(")"),
                   let col = identifier(tokens[i + 2]) {
                    result.json.insert(col.lowercased())
                }
                guard case .word(let w) = tokens[i], w.uppercased() == "IN", i > 0,
                      i + 1 < tokens.count, tokens[i + 1] == .punct("("),
                      let col = identifier(tokens[i - 1]), col.uppercased() != "NOT" else { continue }
                var values: [DatabaseValue] = []
                var j = i + 2
                var ok = true
                var sign = ""
                var expectValue = true
                while j < tokens.count {
                    let t = tokens[j]
                    j += 1
                    if t == .punct(")") { break }
                    if t == .punct(",") { if expectValue { ok = false; break }; expectValue = true; continue }
                    if t == .punct("-") || t == .punct("+") { sign = t == .punct("-") ? "-" : ""; continue }
                    guard expectValue else { ok = false; break }
                    switch t {
                    case .string(let s), .quoted(let s): values.append(s.databaseValue)
                    case .number(let n):
                        let text = sign + n
                        if let v = Int64(text) { values.append(v.databaseValue) }
                        else if let d = Double(text) { values.append(d.databaseValue) }
                        else { ok = false }
                    case .blob(let hex):
                        var bytes: [UInt8] = []
                        var idx = hex.startIndex
                        while idx < hex.endIndex, let next = hex.index(idx, offsetBy: 2, limitedBy: hex.endIndex) {
                            guard let b = UInt8(hex[idx..<next], radix: 16) else { ok = false; break }
                            bytes.append(b); idx = next
                        }
                        values.append(Data(bytes).databaseValue)
                    case .word(let w) where w.uppercased() == "NULL": values.append(.null)
                    case .word(let w) where w.uppercased() == "TRUE": values.append(Int64(1).databaseValue)
                    case .word(let w) where w.uppercased() == "FALSE": values.append(Int64(0).databaseValue)
                    default: ok = false
                    }
                    sign = ""
                    expectValue = false
                    if !ok { break }
                }
                if ok && !values.isEmpty && result.allowed[col.lowercased()] == nil {
                    result.allowed[col.lowercased()] = values
                }
            }
            return result
        }

        static func identifier(_ t: Token) -> String? {
            switch t {
            case .word(let w): return w
            case .quoted(let q): return q
            default: return nil
            }
        }

        static func tokenize(_ sql: String) -> [Token] {
            let chars = Array(sql)
            var tokens: [Token] = []
            var i = 0
            func readQuoted(_ close: Character) -> String {
                var s = ""
                i += 1
                while i < chars.count {
                    if chars[i] == close {
                        if close != "]" && i + 1 < chars.count && chars[i + 1] == close { s.append(close); i += 2; continue }
                        i += 1
                        return s
                    }
                    s.append(chars[i]); i += 1
                }
                return s
            }
            while i < chars.count {
                let c = chars[i]
                if c.isWhitespace { i += 1; continue }
                if c == "-" && i + 1 < chars.count && chars[i + 1] == "-" {
                    while i < chars.count && chars[i] != "\n" { i += 1 }
                    continue
                }
                if c == "/" && i + 1 < chars.count && chars[i + 1] == "*" {
                    i += 2
                    while i + 1 < chars.count && !(chars[i] == "*" && chars[i + 1] == "/") { i += 1 }
                    i += 2
                    continue
                }
                if (c == "x" || c == "X") && i + 1 < chars.count && chars[i + 1] == "'" {
                    i += 1
                    tokens.append(.blob(readQuoted("'")))
                    continue
                }
                if c == "'" { tokens.append(.string(readQuoted("'"))); continue }
                if c == "\"" { tokens.append(.quoted(readQuoted("\""))); continue }
                if c == "`" { tokens.append(.quoted(readQuoted("`"))); continue }
                if c == "[" { tokens.append(.quoted(readQuoted("]"))); continue }
                if c.isNumber || (c == "." && i + 1 < chars.count && chars[i + 1].isNumber) {
                    var s = ""
                    while i < chars.count, chars[i].isNumber || chars[i] == "." || chars[i].isLetter
                            || ((chars[i] == "-" || chars[i] == "+") && (s.last == "e" || s.last == "E")) {
                        s.append(chars[i]); i += 1
                    }
                    tokens.append(.number(s))
                    continue
                }
                if c.isLetter || c == "_" || c == "$" || !c.isASCII {
                    var s = ""
                    while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" || chars[i] == "$" || !chars[i].isASCII {
                        s.append(chars[i]); i += 1
                    }
                    tokens.append(.word(s))
                    continue
                }
                tokens.append(.punct(c))
                i += 1
            }
            return tokens
        }
    }
}
