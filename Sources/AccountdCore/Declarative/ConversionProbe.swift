import GRDB

/// Asks SQLite what a column of another declared type would make of a column's values.
///
/// A rebuild copies each value into the new table, where the new column's affinity
/// applies. The probe copies the same values, bound as they are, into a scratch in-memory
/// table with one column of no type (which keeps every value as given) and one of the new
/// type, and counts the rows whose two columns differ in storage class or bytes.
///
/// For a `STRICT` target the scratch table is `STRICT` too (`old ANY`, which keeps every
/// value as given): a `STRICT` column converts what it can represent losslessly (`'7'` into
/// `7` under INTEGER, `7` into `7.0` under REAL, a number into text under TEXT), and
/// refuses the rest; a refused value is counted as well.
enum ConversionProbe {
    /// How many values `select` (one column, over `db`) would change in a column of `type`
    /// (of a `STRICT` table when `strict`), and one of them as `before → after`.
    static func count(values select: String, in db: Database, into type: String, strict: Bool = false) throws -> (count: Int, example: String) {
        let scratch = try DatabaseQueue()
        defer { try? scratch.close() }
        return try scratch.inDatabase { probe in
            try probe.execute(sql: strict ? "CREATE TABLE probe (old ANY, new \(type)) STRICT" : "CREATE TABLE probe (old, new \(type))")
            let insert = try probe.makeStatement(sql: "INSERT INTO probe (old, new) VALUES (?1, ?1)")
            let cursor = try DatabaseValue.fetchCursor(db, sql: select)
            var refused = 0
            var refusedExample: String?
            while let value = try cursor.next() {
                do {
                    try insert.execute(arguments: [value])
                } catch let error as DatabaseError where strict && error.resultCode == .SQLITE_CONSTRAINT {
                    refused += 1
                    if refusedExample == nil {
                        refusedExample = try String.fetchOne(probe, sql: "SELECT quote(?) || ' is refused'", arguments: [value])
                    }
                }
            }
            let differs = """
                typeof(old) IS NOT typeof(new)
                  OR (typeof(old) IN ('text', 'blob') AND CAST(old AS BLOB) IS NOT CAST(new AS BLOB))
                  OR (typeof(old) IN ('integer', 'real') AND old IS NOT new)
                """
            let count = try Int.fetchOne(probe, sql: "SELECT count(*) FROM probe WHERE \(differs)") ?? 0
            let example = try String.fetchOne(
                probe, sql: "SELECT quote(old) || ' becomes ' || quote(new) FROM probe WHERE \(differs) LIMIT 1") ?? refusedExample ?? ""
            return (count + refused, example)
        }
    }

    /// How many rows of `select` (over `db`) would share their values once stored in columns
    /// of the given declared types and compared under the given collations (nil: BINARY),
    /// in a table that is `STRICT` when `strict`: the rows a UNIQUE key of the new table
    /// would find equal. NULLs are never equal; a value a `STRICT` column refuses is left out
    /// (``count(values:in:into:strict:)`` counts it).
    static func duplicates(rows select: String, in db: Database, columns: [(type: String, collation: String?)], strict: Bool) throws -> Int {
        let scratch = try DatabaseQueue()
        defer { try? scratch.close() }
        return try scratch.inDatabase { probe in
            let names = columns.indices.map { "c\($0)" }
            let definitions = zip(names, columns).map { "\($0) \($1.type)" }.joined(separator: ", ")
            try probe.execute(sql: "CREATE TABLE probe (\(definitions))" + (strict ? " STRICT" : ""))
            let placeholders = names.indices.map { "?\($0 + 1)" }.joined(separator: ", ")
            let insert = try probe.makeStatement(sql: "INSERT INTO probe VALUES (\(placeholders))")
            let cursor = try Row.fetchCursor(db, sql: select)
            while let row = try cursor.next() {
                let values = names.indices.map { row[$0] as DatabaseValue }
                do {
                    try insert.execute(arguments: StatementArguments(values))
                } catch let error as DatabaseError where strict && error.resultCode == .SQLITE_CONSTRAINT {
                    continue
                }
            }
            let grouped = zip(names, columns).map { $0 + ($1.collation.map { " COLLATE \(DefinitionText.quote($0))" } ?? "") }
            return try Int.fetchOne(
                probe,
                sql: "SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM probe WHERE "
                    + names.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
                    + " GROUP BY \(grouped.joined(separator: ", ")) HAVING count(*) > 1)") ?? 0
        }
    }
}
