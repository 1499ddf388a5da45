import GRDB

/// Asks SQLite what a column of another declared type would make of a column's values.
///
/// A rebuild copies each value into the new table, where the new column's affinity
/// applies. The probe copies the same values, bound as they are, into a scratch in-memory
/// table with one column of no type (which keeps every value as given) and one of the new
/// type, and counts the rows whose two columns differ in storage class or bytes.
enum ConversionProbe {
    /// How many values `select` (one column, over `db`) would change in a column of `type`,
    /// and one of them as `before → after`.
    static func count(values select: String, in db: Database, into type: String) throws -> (count: Int, example: String) {
        let scratch = try DatabaseQueue()
        defer { try? scratch.close() }
        return try scratch.inDatabase { probe in
            try probe.execute(sql: "CREATE TABLE probe (old, new \(type))")
            let insert = try probe.makeStatement(sql: "INSERT INTO probe (old, new) VALUES (?1, ?1)")
            let cursor = try DatabaseValue.fetchCursor(db, sql: select)
            while let value = try cursor.next() {
                try insert.execute(arguments: [value])
            }
            let differs = """
                typeof(old) IS NOT typeof(new)
                  OR (typeof(old) IN ('text', 'blob') AND CAST(old AS BLOB) IS NOT CAST(new AS BLOB))
                  OR (typeof(old) IN ('integer', 'real') AND old IS NOT new)
                """
            let count = try Int.fetchOne(probe, sql: "SELECT count(*) FROM probe WHERE \(differs)") ?? 0
            let example = try String.fetchOne(
                probe, sql: "SELECT quote(old) || ' becomes ' || quote(new) FROM probe WHERE \(differs) LIMIT 1") ?? ""
            return (count, example)
        }
    }
}
