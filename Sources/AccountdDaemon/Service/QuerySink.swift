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

/// A `Query` without `more`: at most `limit` rows, in one reply.
struct WholeQuery: QuerySink {
    let limit: Int
    let isGone: @Sendable () -> Bool

    func run(_ cursor: SQLConnection.Cursor, connection: SQLConnection) throws -> QueryReply {
        var rows: [[SQLValue]] = []
        var truncated = false
        while let row = try cursor.next() {
            guard rows.count < limit else {
                truncated = true
                break
            }
            rows.append(row)
        }
        return QueryReply(columns: cursor.columns, rows: rows, rowCount: rows.count, truncated: truncated)
    }
}
