import AccountdTestSupport
import Foundation
import GRDB
import Testing

@testable import AccountdCore

/// The schema comparison calls two table definitions different exactly when SQLite
/// treats them differently.
///
/// Each variant of a table differs from the others in one clause of one column or
/// constraint (type, collation, default, NOT NULL, CHECK, UNIQUE, ON CONFLICT, a
/// generated expression and its storage), or only in its spelling (case, spacing,
/// parentheses, an explicit default). SQLite itself is asked how each behaves: the same
/// inserts, updates and queries run on each, with what `PRAGMA table_xinfo` reports of
/// the column's type and storage, and the transcripts are compared. For every pair, the
/// comparison (``SchemaReader`` and ``SchemaDiff``) must say "different" exactly when the
/// transcripts differ. Pairs are drawn at random by seed; `ACCOUNTD_SCHEMA_SEEDS=N` runs N
/// more seeds.
@Suite struct SchemaComparisonDifferentialTests {
    /// Variants of column `c` (and an optional table constraint) in
    /// `CREATE TABLE t (id INTEGER PRIMARY KEY, c ..., d INTEGER ...)`.
    static let variants: [(column: String, constraint: String?)] = [
        ("TEXT", nil), ("text", nil), ("TEXT COLLATE BINARY", nil), ("TEXT  collate   binary", nil),
        ("TEXT COLLATE NOCASE", nil), ("TEXT COLLATE nocase", nil), ("TEXT COLLATE RTRIM", nil),
        ("TEXT UNIQUE", nil), ("TEXT", "UNIQUE (c)"), ("TEXT UNIQUE ON CONFLICT ABORT", nil),
        ("TEXT UNIQUE ON CONFLICT REPLACE", nil), ("TEXT", "UNIQUE (c) ON CONFLICT REPLACE"),
        ("TEXT UNIQUE ON CONFLICT IGNORE", nil), ("TEXT COLLATE NOCASE UNIQUE", nil), ("TEXT", "UNIQUE (c COLLATE NOCASE)"),
        ("TEXT NOT NULL DEFAULT 'x'", nil), ("TEXT NOT NULL ON CONFLICT REPLACE DEFAULT 'x'", nil),
        ("TEXT DEFAULT 'x'", nil), ("TEXT DEFAULT ('x')", nil), ("TEXT DEFAULT 'y'", nil),
        // Double-quoted and bare defaults are strings, whose case counts.
        ("TEXT DEFAULT \"x\"", nil), ("TEXT DEFAULT \"X\"", nil), ("TEXT DEFAULT x", nil), ("TEXT DEFAULT X", nil),
        ("TEXT CHECK (length(c) < 5)", nil), ("TEXT CHECK (length(c) < 6)", nil), ("TEXT", "CHECK (length(c) < 5)"),
        ("INTEGER", nil), ("", nil), ("REAL", nil),
        ("INTEGER GENERATED ALWAYS AS (d * 2) STORED", nil), ("INTEGER AS (d*2) STORED", nil),
        ("INTEGER GENERATED ALWAYS AS (d * 2) VIRTUAL", nil), ("INTEGER GENERATED ALWAYS AS (d * 3) STORED", nil),
    ]

    static func definition(_ variant: (column: String, constraint: String?)) -> String {
        "CREATE TABLE t (id INTEGER PRIMARY KEY, c \(variant.column), d INTEGER\(variant.constraint.map { ", " + $0 } ?? ""))"
    }

    /// What SQLite does with a table of this definition.
    static func transcript(_ definition: String) throws -> [String] {
        let queue = try DatabaseQueue()
        return try queue.inDatabase { db in
            try db.execute(sql: definition)
            var out: [String] = []
            let statements = [
                "INSERT INTO t (id, c, d) VALUES (1, 'Bob', 1)", "INSERT INTO t (id, c, d) VALUES (2, 'bob', 2)",
                "INSERT INTO t (id, c, d) VALUES (3, 'bob ', 3)", "INSERT INTO t (id, c, d) VALUES (4, NULL, 4)",
                "INSERT INTO t (id, d) VALUES (5, 5)", "INSERT INTO t (id, c, d) VALUES (6, '123456', 6)",
                "INSERT INTO t (id, c, d) VALUES (7, '7', 7)", "INSERT INTO t (id, c, d) VALUES (8, 'Bob', 8)",
                "INSERT INTO t (id, d) VALUES (9, 9)", "INSERT INTO t (id, c, d) VALUES (10, 'abcde', 10)",
                "UPDATE t SET d = d + 10 WHERE id = 1",
            ]
            for sql in statements {
                do {
                    try db.execute(sql: sql)
                    out.append("ok \(db.changesCount)")
                } catch let error as DatabaseError {
                    out.append("error \(error.resultCode.rawValue)")
                }
            }
            let queries = [
                "SELECT id, typeof(c), quote(c) FROM t ORDER BY id", "SELECT id FROM t ORDER BY c, id",
                "SELECT count(*) FROM t WHERE c = 'BOB'", "SELECT count(*) FROM t WHERE c = 'bob'",
                "SELECT lower(type), \"notnull\", pk, hidden FROM pragma_table_xinfo('t') ORDER BY cid",
            ]
            for sql in queries {
                out.append(try Row.fetchAll(db, sql: sql).map { $0.description }.joined(separator: ";"))
            }
            return out
        }
    }

    static func schema(_ definition: String) throws -> NormalizedSchema {
        let queue = try DatabaseQueue()
        return try queue.inDatabase { db in
            try db.execute(sql: definition)
            return try SchemaReader.read(db)
        }
    }

    static let seeds: [UInt64] = {
        let extra = Int(ProcessInfo.processInfo.environment["ACCOUNTD_SCHEMA_SEEDS"] ?? "") ?? 0
        return [1, 2, 3] + (0..<UInt64(max(0, extra))).map { 500 + $0 }
    }()

    @Test(arguments: seeds) func theComparisonSeesADifferenceExactlyWhenSQLiteBehavesDifferently(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let definitions = Self.variants.map(Self.definition)
        let transcripts = try definitions.map(Self.transcript)
        let schemas = try definitions.map(Self.schema)
        // Every pair on the first seed; a random half on the others, as a check of the sampling.
        for left in definitions.indices {
            for right in definitions.indices where right > left && (seed == 1 || random.below(2) == 0) {
                let behaves = transcripts[left] != transcripts[right]
                let differences = SchemaDiff(leftName: "left", rightName: "right").differences(schemas[left], schemas[right])
                #expect(
                    behaves == !differences.isEmpty,
                    "\(definitions[left]) vs \(definitions[right]): SQLite \(behaves ? "behaves differently" : "behaves the same"), the comparison says \(differences)")
            }
        }
    }
}
