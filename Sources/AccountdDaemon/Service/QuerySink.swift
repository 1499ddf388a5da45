import AccountdCore
import AccountdProtocol

/// Where a `Query`'s rows go, on the pool thread that steps the statement.
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

/// A `Query` with `more`: `{columns}`, then `{rows}` replies of about 64 KiB, each written
/// from the pool thread only once the one before was handed to the socket, so that a slow
/// reader holds a cursor and two chunks, never the result. The time spent waiting for the
/// client does not count against `limits.queryTimeoutMs`.
struct StreamedQuery: QuerySink {
    /// The most rows sent; nil for all.
    let limit: Int?
    let write: @Sendable ([UInt8]) throws -> Void
    let isGone: @Sendable () -> Bool

    func run(_ cursor: SQLConnection.Cursor, connection: SQLConnection) throws -> QueryReply {
        func send(_ text: String) throws {
            let started = ContinuousClock.now
            do { try write(Array(text.utf8)) } catch { throw SQLStopped() }
            connection.extendDeadline(by: .now - started)
        }
        try send(Reply(QueryReply(columns: cursor.columns), continues: true).encoded())
        let opening = "{\"parameters\":{\"rows\":["
        let closing = "]},\"continues\":true}\n"
        var chunk = opening
        var inChunk = 0
        var count = 0
        var truncated = false
        while let row = try cursor.next() {
            if let limit, count >= limit {
                truncated = true
                break
            }
            if inChunk > 0 { chunk += "," }
            chunk += "["
            for (index, value) in row.enumerated() {
                if index > 0 { chunk += "," }
                value.write(to: &chunk)
            }
            chunk += "]"
            inChunk += 1
            count += 1
            if chunk.utf8.count >= DataService.chunkBytes {
                try send(chunk + closing)
                chunk = opening
                inChunk = 0
            }
        }
        if inChunk > 0 { try send(chunk + closing) }
        return QueryReply(rowCount: count, truncated: truncated)
    }
}
