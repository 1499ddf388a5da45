import AccountdProtocol
import Foundation
import GRDB

/// Test support: a canonical, type-preserving dump of every user table, for comparing
/// the contents of two databases.
///
/// Each row becomes one string, `col=value` pairs in table column order joined by
/// `", "`, with values encoded by storage class: `null`, `i:42`, `r:1.5`,
/// `t:"text"` (JSON-style escapes), `b:00ff` (lowercase hex). A table's rows are sorted,
/// so row order and rowids don't matter. Tables named `sqlite_%` or `accountd_%`,
/// views and virtual tables are skipped, and so are the shadow tables that hold a
/// virtual table's contents unless `shadowTables` is true (two files that ran the same
/// statements have the same shadow rows; an export and rebuild need not).
///
/// `ignoring` holds `"table.column"` entries (or `"*.column"` for every table) whose
/// values are left out of the dump; names compare case-insensitively.
public enum TableDump {
    public static func dump(_ db: Database, ignoring: Set<String> = [], shadowTables: Bool = false) throws -> [String: [String]] {
        let ignored = Set(ignoring.map { $0.lowercased() })
        var result: [String: [String]] = [:]
        for table in try userTables(db, shadowTables: shadowTables) {
            var names: [String] = []
            for row in try Row.fetchAll(db, sql: "PRAGMA main.table_xinfo(\(quote(table)))") {
                let name: String = row["name"]
                let hidden: Int = row["hidden"]
                guard hidden != 1 else { continue }   // hidden columns of virtual tables
                let lower = name.lowercased()
                if ignored.contains("\(table.lowercased()).\(lower)") || ignored.contains("*.\(lower)") { continue }
                names.append(name)
            }
            guard !names.isEmpty else {
                let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(quote(table))") ?? 0
                result[table] = Array(repeating: "", count: count)
                continue
            }
            let sql = "SELECT \(names.map(quote).joined(separator: ", ")) FROM main.\(quote(table))"
            var lines: [String] = []
            let cursor = try Row.fetchCursor(db, sql: sql)
            while let row = try cursor.next() {
                var parts: [String] = []
                parts.reserveCapacity(names.count)
                for (i, value) in row.databaseValues.enumerated() {
                    parts.append(names[i] + "=" + encode(value))
                }
                lines.append(parts.joined(separator: ", "))
            }
            result[table] = lines.sorted()
        }
        return result
    }

    /// Opens the file read-only and dumps it.
    public static func dumpFile(path: String, ignoring: Set<String> = [], shadowTables: Bool = false) throws -> [String: [String]] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in try dump(db, ignoring: ignoring, shadowTables: shadowTables) }
    }

    /// The canonical encoding of one value.
    public static func encode(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null:
            return "null"
        case .int64(let i):
            return "i:\(i)"
        case .double(let d):
            return "r:\(d)"
        case .string(let s):
            return "t:" + escape(s)
        case .blob(let data):
            let digits = Array("0123456789abcdef".utf8)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(data.count * 2)
            for b in data {
                bytes.append(digits[Int(b >> 4)])
                bytes.append(digits[Int(b & 0x0f)])
            }
            return "b:" + String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func escape(_ s: String) -> String { JSONValue.string(s).serialized() }

    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// SQLite's own tables and accountd's records are not user data.
    static func isSkipped(_ name: String) -> Bool {
        let l = name.lowercased()
        return l.hasPrefix("sqlite_") || l.hasPrefix("accountd_")
    }

    /// User tables of the main schema (no virtual tables, and shadow tables only when asked), sorted by name.
    static func userTables(_ db: Database, shadowTables: Bool = false) throws -> [String] {
        var names: [String] = []
        do {
            for row in try Row.fetchAll(db, sql: "PRAGMA main.table_list") {
                let type: String = row["type"]
                let name: String = row["name"]
                if (type == "table" || (shadowTables && type == "shadow")) && !isSkipped(name) { names.append(name) }
            }
        } catch {
            // SQLite older than 3.37: no table_list pragma.
            for row in try Row.fetchAll(db, sql: "SELECT name, sql FROM main.sqlite_master WHERE type = 'table'") {
                let name: String = row["name"]
                let sql: String = row["sql"] ?? ""
                if isSkipped(name) || sql.uppercased().hasPrefix("CREATE VIRTUAL") { continue }
                names.append(name)
            }
        }
        return names.sorted()
    }
}
