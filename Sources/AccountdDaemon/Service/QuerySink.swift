import AccountdCore
import AccountdProtocol
import NIOCore

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
    /// Counts the reply's bytes as its rows are read (``ReplyBudget``); nil: not counted.
    var lease: ReplyBudget.Lease? = nil
    /// For a `Query` answered on an event loop (``DataService/queryAtOnce(_:_:maxRows:)``): past
    /// this many bytes of rows, ``SQLOverBudget`` sends it to the pool, where a large reply
    /// is made and encoded without holding up the loop's other connections.
    var atOnceBytes: Int? = nil

    func run(_ cursor: SQLConnection.Cursor, connection: SQLConnection) throws -> QueryReply {
        var rows: [[SQLValue]] = []
        var bytes = 0
        var encoded = 0
        var truncated = false
        while let row = try cursor.next() {
            bytes += row.reduce(0) { $0 + Self.size(of: $1) }
            guard rows.count < limit, rows.isEmpty || bytes <= Self.maxBytes else {
                truncated = true
                break
            }
            if let atOnceBytes, bytes > atOnceBytes {
                cursor.ranOverBudget()
                throw SQLOverBudget()
            }
            if let lease {
                encoded += row.reduce(2) { $0 + Self.encodedSize(of: $1) }
                try lease.cover(encoded)
            }
            rows.append(row)
        }
        return QueryReply(columns: cursor.columns, rows: rows, rowCount: rows.count, truncated: truncated)
    }

    /// About how many bytes `value` takes in the reply's JSON (a blob is base64).
    static func encodedSize(of value: SQLValue) -> Int {
        switch value {
        case .null, .integer, .real: 24
        case .text(let text): text.utf8.count + 3
        case .textBytes(let bytes): bytes.count + 3
        case .blob(let bytes): (bytes.count + 2) / 3 * 4 + 3
        }
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

/// A `Query` without `more` answered from the pool: its rows (``WholeQuery``), and a reply
/// larger than ``ReplyBudget/unbudgetedBytes`` encoded to its JSON here, on the pool thread,
/// so that no event loop builds or copies it (hostile31 F-loop).
struct EncodedQuery: QuerySink {
    /// A small reply, gathered with the connection's others; or a large one's framed bytes,
    /// written alone, with the lease that counts them until the socket has them.
    enum Answer: Sendable {
        case reply(QueryReply)
        case bytes(ByteBuffer, ReplyBudget.Lease)
    }

    let rows: WholeQuery
    let lease: ReplyBudget.Lease

    var isGone: @Sendable () -> Bool { rows.isGone }

    func run(_ cursor: SQLConnection.Cursor, connection: SQLConnection) throws -> Answer {
        var reply: QueryReply? = try rows.run(cursor, connection: connection)
        let size = (reply!.rows ?? []).reduce(0) { $0 + $1.reduce(2) { $0 + WholeQuery.encodedSize(of: $1) } }
        guard size > ReplyBudget.unbudgetedBytes else { return .reply(reply!) }
        var text = Reply(reply!).encoded()
        reply = nil  // the rows go before the JSON is copied
        lease.settle(text.utf8.count)
        let buffer = ByteBuffer(string: text)
        text = ""
        return .bytes(buffer, lease)
    }
}
