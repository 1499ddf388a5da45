/// A schema reduced to what matters for "is this the same schema": tables with
/// their columns (types, NOT NULL, defaults, primary keys, collations, generated
/// expressions and their storage, `ON CONFLICT` clauses), foreign keys, CHECK and
/// UNIQUE constraints (with their collations), plus indexes, views and triggers.
///
/// Names are lowercased, and SQL text is normalised (layout, comments, quoting and
/// case of keywords dropped), so a `schema.sql` written by hand compares equal to
/// the schema that a chain of `ALTER TABLE` steps produced. Column order counts:
/// it decides what `SELECT *` and `INSERT ... VALUES` mean. The daemon's own
/// `accountd_*` tables and SQLite's internal `sqlite_*` objects are left out.
public struct NormalizedSchema: Hashable, Sendable {
    /// One column, as `PRAGMA table_xinfo` describes it.
    public struct Column: Hashable, Sendable {
        public var name: String
        public var type: String
        public var notNull: Bool
        public var defaultValue: String?
        /// 0 when the column is not part of the primary key, else its 1-based position in it.
        public var primaryKeyPosition: Int
        /// 0 for an ordinary column; 2 for a generated `VIRTUAL` one, 3 for a `STORED` one.
        public var hidden: Int
        /// The column's collating sequence, lowercased: `binary` unless it declares another.
        public var collation: String = "binary"
        /// A generated column's expression, normalised.
        public var generated: String? = nil
        /// The `ON CONFLICT` clauses of its constraints (`not null on conflict replace`), sorted.
        public var conflicts: [String] = []
    }

    /// One foreign key, as `PRAGMA foreign_key_list` describes it.
    public struct ForeignKey: Hashable, Sendable, Comparable {
        public var columns: [String]
        public var table: String
        public var targetColumns: [String]
        public var onUpdate: String
        public var onDelete: String
        /// `DEFERRABLE INITIALLY DEFERRED`: checked at commit, not at each statement.
        public var deferred: Bool = false

        public static func < (a: ForeignKey, b: ForeignKey) -> Bool { a.description < b.description }

        var description: String {
            "(\(columns.joined(separator: ", "))) references \(table)(\(targetColumns.joined(separator: ", ")))"
                + " on update \(onUpdate.lowercased()) on delete \(onDelete.lowercased())"
                + (deferred ? " deferrable initially deferred" : "")
        }
    }

    /// One table.
    public struct Table: Hashable, Sendable {
        public var columns: [Column]
        public var foreignKeys: [ForeignKey]
        /// Normalised CHECK expressions, sorted.
        public var checks: [String]
        /// UNIQUE constraints declared in the table, as sorted column lists.
        public var uniques: [String]
        /// `WITHOUT ROWID`, `STRICT`, `AUTOINCREMENT` and the like, sorted.
        public var options: [String]
        /// The `ON CONFLICT` clauses of table constraints (`unique (a, b) on conflict ignore`), sorted.
        public var conflicts: [String] = []
    }

    public var tables: [String: Table] = [:]
    /// Explicit indexes: name to normalised `CREATE INDEX` text.
    public var indexes: [String: String] = [:]
    /// Views: name to normalised `CREATE VIEW` text.
    public var views: [String: String] = [:]
    /// Triggers: name to normalised `CREATE TRIGGER` text.
    public var triggers: [String: String] = [:]

    public init() {}

    /// A stable, human-readable rendering, one object per block, sorted by name.
    public var canonicalText: String {
        var lines: [String] = []
        for name in tables.keys.sorted() {
            let table = tables[name]!
            lines.append("table \(name)")
            for column in table.columns {
                lines.append("  column " + Self.describe(column))
            }
            for key in table.foreignKeys { lines.append("  foreign key " + key.description) }
            for check in table.checks { lines.append("  check " + check) }
            for unique in table.uniques { lines.append("  unique " + unique) }
            for option in table.options { lines.append("  option " + option) }
            for conflict in table.conflicts { lines.append("  constraint " + conflict) }
        }
        for (kind, objects) in [("index", indexes), ("view", views), ("trigger", triggers)] {
            for name in objects.keys.sorted() { lines.append("\(kind) \(name): \(objects[name]!)") }
        }
        return lines.joined(separator: "\n")
    }

    /// SHA-256 of ``canonicalText``: equal fingerprints mean equal schemas.
    public var fingerprint: String { Digest.sha256Hex(canonicalText) }

    /// The object names in this schema, as `kind name`, for lookups of where each was defined.
    public var objectNames: [(kind: String, name: String)] {
        tables.keys.map { ("table", $0) } + indexes.keys.map { ("index", $0) } + views.keys.map { ("view", $0) }
            + triggers.keys.map { ("trigger", $0) }
    }

    static func describe(_ column: Column) -> String {
        var text = "\(column.name) \(column.type.isEmpty ? "(no type)" : column.type)"
        if column.notNull { text += " not null" }
        if let value = column.defaultValue { text += " default \(value)" }
        if column.primaryKeyPosition > 0 { text += " primary key #\(column.primaryKeyPosition)" }
        if column.collation != "binary" { text += " collate \(column.collation)" }
        if column.hidden != 0 { text += " generated" + (column.generated.map { " as (\($0))" } ?? "") + (column.hidden == 3 ? " stored" : " virtual") }
        for conflict in column.conflicts { text += " " + conflict }
        return text
    }
}
