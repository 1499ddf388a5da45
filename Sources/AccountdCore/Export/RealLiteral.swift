import Foundation
import GRDBSQLite

/// Writes a REAL as SQL text that SQLite reads back as the very same double.
///
/// SQLite does not read decimal text with correct rounding: SQLite 3.40 reads about one
/// everyday value in 20,000 written in its shortest form (`54.24511312402662`) one bit
/// off, and some tiny values are read wrong even with 20 significant digits. So each
/// real's text is checked by SQLite itself, with `CAST(?1 AS REAL)`, which converts text
/// with the same routine as a literal in a statement: the shortest form first, then 17
/// and 20 significant digits. A value that none of them gives is written as a sum,
/// `(a+b)`: `a` is its shortest form, and `b` is the exact difference between the value and
/// what SQLite reads for `a` (written the same way). Adding the two is exact, because
/// the difference is exactly representable, so the sum reads back bit for bit.
struct RealLiteral {
    private let check: OpaquePointer

    /// A writer checked against the SQLite of `connection`.
    init(_ connection: OpaquePointer) throws {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(connection, "SELECT CAST(?1 AS REAL)", -1, &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw AccountdError(.storage, "preparing the export's check of reals failed: \(String(cString: sqlite3_errmsg(connection)))")
        }
        check = statement
    }

    /// Releases the prepared check. Call it once, when the export ends.
    func finalize() {
        sqlite3_finalize(check)
    }

    /// Appends `value` as text that SQLite reads as exactly `value`.
    func append(_ value: Double, to out: inout String) {
        guard value.isFinite else {
            out += value > 0 ? "9e999" : "-9e999"
            return
        }
        out += literal(value, depth: 0)
    }

    private func literal(_ value: Double, depth: Int) -> String {
        let shortest = String(value)
        var candidates = [shortest, String(format: "%.17g", value), String(format: "%.20g", value)]
        // "1e+20" must stay a REAL, and %g drops the point of a whole number ("1" reads as INTEGER).
        candidates = candidates.map { $0.contains(where: { $0 == "." || $0 == "e" }) ? $0 : $0 + ".0" }
        for text in candidates where read(text).bitPattern == value.bitPattern {
            return text
        }
        // The remainder is exact (the two values are within a few units in the last place
        // of each other), and much smaller, so this ends within a few terms.
        let first = read(candidates[0])
        let rest = value - first
        guard depth < 8, rest != 0, (first + rest).bitPattern == value.bitPattern else { return candidates[1] }
        return "(\(candidates[0])+\(literal(rest, depth: depth + 1)))"
    }

    /// What SQLite reads `text` as.
    private func read(_ text: String) -> Double {
        sqlite3_reset(check)
        // SQLITE_TRANSIENT: SQLite copies the text, which lives only inside the closure.
        _ = text.withCString { sqlite3_bind_text(check, 1, $0, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self)) }
        guard sqlite3_step(check) == SQLITE_ROW else { return .nan }
        return sqlite3_column_double(check, 0)
    }
}
