import AccountdProtocol
import NIOCore

/// The client went away while replies were being written.
struct ClientGone: Error {}

/// A request's way to its connection's one writer (``ConnectionWriter``), from the task
/// that runs it (and, for a switch's progress, from the pool thread it hands work to).
///
/// It writes nothing itself: every reply is appended to the connection's writer on the
/// channel's event loop (where the task runs, so a reply costs no hop), so the replies of
/// a task and of the requests before and after it cannot overtake each other. A varlink
/// `oneway` call's writer drops everything.
struct ReplyWriter: Sendable {
    private let loop: any EventLoop
    /// Nil for a `oneway` call.
    private let writer: NIOLoopBound<ConnectionWriter>?
    /// Whether the client went away (see ``ReplyOutput/isGone``); cheap, from any thread.
    let isClientGone: @Sendable () -> Bool

    /// The way of a request to `writer`; `dropping` (a `oneway` call) writes nothing. Made on the writer's event loop.
    init(_ writer: ConnectionWriter, dropping: Bool = false) {
        loop = writer.loop
        self.writer = dropping ? nil : NIOLoopBound(writer, eventLoop: writer.loop)
        if dropping {
            isClientGone = { false }
        } else {
            isClientGone = writer.isGone
        }
    }

    /// Sends `reply`: gathered with the others, and written once ``ConnectionWriter/flushThreshold``
    /// bytes are pending, suspending until they are handed to the socket (a client that does
    /// not read slows the request down instead of growing the daemon's memory).
    func send(_ reply: Reply) async throws(ClientGone) {
        try await onLoop { writer in
            writer.send(reply)
            return writer.isFull ? writer.flushed() : nil
        }
    }

    /// Writes what is pending now; suspends until it is handed to the socket only when it is
    /// large. With nothing pending it does nothing, even if the client has gone: a request
    /// whose client left runs to its end (a Switch is made all the same) until it has
    /// something to write.
    func flush() async throws(ClientGone) {
        try await onLoop { writer in
            guard writer.pendingBytes > 0 else { return nil }
            if writer.isFull { return writer.flushed() }
            guard writer.isActive else { return writer.loop.makeFailedFuture(ClientGone()) }
            writer.flush()
            return nil
        }
    }

    /// Sends `reply` now and suspends until it is handed to the socket (a Watch event).
    func deliver(_ reply: Reply) async throws(ClientGone) {
        try await onLoop { writer in
            writer.send(reply)
            return writer.flushed()
        }
    }

    /// Hands framed reply bytes (a piece of a streamed Query or Export) to the connection's
    /// writer, after the replies sent before, and returns the write without waiting for it:
    /// the caller makes the next piece meanwhile, then awaits this one (``written(_:within:)``),
    /// so a stream holds at most two pieces and no thread waits for the client.
    func start(_ bytes: [UInt8]) -> EventLoopFuture<Void> {
        guard let writer else { return loop.makeSucceededVoidFuture() }
        if loop.inEventLoop { return writer.value.write(ByteBuffer(bytes: bytes)) }
        return loop.flatSubmit { writer.value.write(ByteBuffer(bytes: bytes)) }
    }

    /// Hands framed reply bytes made off the event loop (a large `Query` reply) to the
    /// connection's writer, after the replies sent before, without copying them on the loop;
    /// the future completes once the socket has taken them, or fails if it never will.
    func start(_ bytes: ByteBuffer) -> EventLoopFuture<Void> {
        guard let writer else { return loop.makeSucceededVoidFuture() }
        if loop.inEventLoop { return writer.value.write(bytes) }
        return loop.flatSubmit { writer.value.write(bytes) }
    }

    /// Suspends until `write` (from ``start(_:)``) is handed to the socket.
    ///
    /// - Throws: ``ClientGone`` when the client went away; ``ReplyStalled`` when the client
    ///   took no byte of what was written for `bound` (``StallWatch``: a client that reads
    ///   slowly but steadily is never cut off, however long the piece takes).
    func written(_ write: EventLoopFuture<Void>, within bound: Duration) async throws {
        guard let writer else { return try await write.get() }
        let loop = write.eventLoop
        let settled = loop.makePromise(of: Void.self)
        let watching: @Sendable () -> Void = {
            let watch = StallWatch(loop: loop, bound: bound, measure: { writer.value.backlog() }) { settled.fail(ReplyStalled()) }
            // Whichever comes first settles it; NIO ignores the second.
            write.assumeIsolated().whenComplete { result in
                watch.stop()
                settled.completeWith(result.mapError { _ in ClientGone() })
            }
        }
        if loop.inEventLoop { watching() } else { loop.execute(watching) }
        try await settled.futureResult.get()
    }

    /// Sends `reply` from any thread (a switch's progress, made on a pool thread) without
    /// waiting: it is written after the replies sent before it. For a few small replies only.
    func post(_ reply: Reply) {
        guard let writer else { return }
        loop.execute {
            writer.value.send(reply)
            writer.value.flush()
        }
    }

    /// Runs `body` on the writer's event loop (at once when already there, as a task's code
    /// is), then waits for the write it returns, if any.
    private func onLoop(_ body: @escaping @Sendable (ConnectionWriter) -> EventLoopFuture<Void>?) async throws(ClientGone) {
        guard let writer else { return }
        let written: EventLoopFuture<Void>?
        if loop.inEventLoop {
            written = body(writer.value)
        } else {
            let loop = loop
            written = loop.flatSubmit { body(writer.value) ?? loop.makeSucceededVoidFuture() }
        }
        guard let written else { return }
        do {
            try await written.get()
        } catch {
            throw ClientGone()
        }
    }
}

/// The client took nothing of a streamed reply's piece for the stream's stall bound (``ReplyStream``).
struct ReplyStalled: Error {}
