import AccountdProtocol
import NIOCore

/// How a streamed reply (a `Query` with `more`, an `Export`) reaches its client: made a
/// piece at a time, one blocking-pool job per piece, and written through the request's
/// ``ReplyWriter`` while the next piece is made. No thread ever waits for the client: between
/// pieces the request's task is suspended, holding only what the stream keeps (a cursor and
/// its read transaction, or an export's place), and two pieces at most.
///
/// A client that takes nothing of the stream for ``stallBound`` (`limits.streamStallSeconds`)
/// ends it with ``StreamStalled`` (``StallWatch``: progress is measured, so a slow but steady
/// reader is served to the end): what the stream held (its snapshot of the WAL, a staged
/// copy) is released then, however long the client stays connected. A request cancelled
/// (its connection closed at the end of shutdown's grace) makes no more pieces.
struct ReplyStream: Sendable {
    /// Where the pieces go.
    let writer: ReplyWriter
    /// How long a piece may wait for the client before the stream is ended.
    let stallBound: Duration

    /// A piece of the stream: framed reply bytes, and whether it is the last.
    struct Piece: Sendable {
        var bytes: [UInt8]
        var done: Bool
    }

    /// Streams the pieces `next` makes (each call one pool job) until one is the last, and
    /// returns once every piece is handed to the socket.
    ///
    /// - Parameter what: the stream as the stall's message names it ("the Query on account alice").
    /// - Throws: what `next` throws; ``ClientGone`` when the client went away;
    ///   ``StreamStalled`` when it took nothing for ``stallBound``. The caller then releases
    ///   what the stream held.
    func pump(_ what: @autoclosure () -> String, _ next: () async throws -> Piece) async throws {
        var inFlight: EventLoopFuture<Void>?
        do {
            while true {
                // A request cancelled at the end of shutdown's grace makes no more pieces.
                try Task.checkCancellation()
                let piece = try await next()
                if let inFlight { try await writer.written(inFlight, within: stallBound) }
                inFlight = piece.bytes.isEmpty ? nil : writer.start(piece.bytes)
                if piece.done { break }
            }
            if let inFlight { try await writer.written(inFlight, within: stallBound) }
        } catch is ReplyStalled {
            throw StreamStalled(what: what(), bound: stallBound)
        }
    }
}

/// A stream's client took nothing for `limits.streamStallSeconds`: the stream was ended and
/// what it held released. On the wire it is a `QueryTimeout` (the time is the stall bound),
/// the name SPEC section 12 gives a request stopped for taking too long.
struct StreamStalled: WireError {
    /// The stream, as the message names it.
    let what: String
    let bound: Duration

    private var milliseconds: Int { Int(bound.components.seconds * 1000 + bound.components.attoseconds / 1_000_000_000_000_000) }

    var wireName: ErrorName { .queryTimeout }
    var wireMessage: String {
        "\(what) was ended: its client read none of its replies for \(milliseconds / 1000) s (limits.streamStallSeconds), and the snapshot it held was released; read the replies as they come, or ask for less (maxRows, a narrower statement)"
    }
    var wireFacts: [(String, JSONValue)] { [("timeoutMs", JSONValue(milliseconds))] }
}
