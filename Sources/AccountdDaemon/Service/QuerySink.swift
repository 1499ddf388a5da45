import AccountdCore
import AccountdProtocol

/// Where a `Query`'s rows go, on the pool thread that steps the statement, for a `Query`
/// answered in one reply (a streamed one is read a page at a time: ``QueryPages``).
protocol QuerySink: Sendable {
    associatedtype Result: Sendable
    /// Whether the client went away; asked while the statement runs.
    var isGone: @Sendable () -> Bool { get }
    /// Takes the rows of `cursor` and returns what the request's last reply needs.
    mutating func run(_ cursor: SQLConnection.Cursor, connection: SQLConnection) throws -> Result
}

/// A `Query` without `more`: at most `limit` rows, in one reply, and rows of at most
/// ``maxBytes`` in all; past either, the rows so far with `truncated: true` (`more` streams
/// them all).
struct WholeQuery: QuerySink {
    /// The values' bytes one reply holds at most: two of the largest value a statement may
    /// make (``SQLConnection/maximumValueBytes``), so any one value still comes back whole,
    /// and one reply never grows the daemon by more than about this much (its JSON form a
    /// third more for blobs, in base64).
    static let maxBytes = 2 * SQLConnection.maximumValueBytes

    let limit: Int
    let isGone: @Sendable () -> Bool

    func run(_ cursor: SQLConnection.Cursor, connection: SQLConnection) throws -> QueryReply {
        var rows: [[SQLValue]] = []
        var bytes = 0
        var truncated = false
        while let row = try cursor.next() {
            bytes += row.reduce(0) { $0 + Self.size(of: $1) }
            guard rows.count < limit, rows.isEmpty || bytes <= Self.maxBytes else {
                truncated = true
                break
            }
            rows.append(row)
        }
        return QueryReply(columns: cursor.columns, rows: rows, rowCount: rows.count, truncated: truncated)
    }

    /// About how many bytes `value` takes in the reply.
    static func size(of value: SQLValue) -> Int {
        switch value {
        case .null, .integer, .real: 8
        case .text(let text): text.utf8.count
        case .textBytes(let bytes), .blob(let bytes): bytes.count
        }
    }
}
