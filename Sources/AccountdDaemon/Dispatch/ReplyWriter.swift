import AccountdProtocol
import NIOCore
import Synchronization

/// The client went away while replies were being written.
struct ClientGone: Error {}

/// A request's way to its connection's one writer (``ConnectionWriter``), from the task
/// that runs it and from the pool threads that task hands work to.
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
            return writer.pendingBytes >= ConnectionWriter.flushThreshold ? writer.flushed() : nil
        }
    }

    /// Writes what is pending now; suspends until it is handed to the socket only when it is
    /// large. With nothing pending it does nothing, even if the client has gone: a request
    /// whose client left runs to its end (a Switch is made all the same) until it has
    /// something to write.
    func flush() async throws(ClientGone) {
        try await onLoop { writer in
            guard writer.pendingBytes > 0 else { return nil }
            if writer.pendingBytes >= ConnectionWriter.flushThreshold { return writer.flushed() }
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

    /// Writes framed reply bytes from a blocking thread (an export's chunks, a switch's
    /// progress, a streamed query's rows), returning once the bytes written this way before
    /// them are handed to the socket: one chunk goes out while the next is made, and a slow
    /// reader slows the work down (at most two chunks held) instead of growing the daemon's
    /// memory. The bytes go to the event loop, into the connection's writer, after the
    /// replies sent before.
    var blockingWrite: @Sendable ([UInt8]) throws -> Void {
        guard let writer else { return { _ in } }
        let loop = loop
        let inFlight = InFlightWrite()
        return { bytes in
            let written = loop.flatSubmit { writer.value.write(ByteBuffer(bytes: bytes)) }
            do {
                // The pool thread waits here, never an event loop.
                try inFlight.replace(with: written)?.wait()
            } catch {
                throw ClientGone()
            }
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

/// The one write a ``ReplyWriter/blockingWrite`` has in flight.
private final class InFlightWrite: Sendable {
    private let last = Mutex<EventLoopFuture<Void>?>(nil)

    /// Records `write` as the one in flight and returns the one it follows.
    func replace(with write: EventLoopFuture<Void>) -> EventLoopFuture<Void>? {
        last.withLock { last in
            defer { last = write }
            return last
        }
    }
}
