import AccountdProtocol
import NIOCore

/// Where a connection's reply bytes go: its channel, or a test's buffer.
protocol ReplyOutput: AnyObject {
    /// Writes and flushes `bytes`; `promise` completes once they are handed to the socket,
    /// or fails if they never will be.
    func write(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?)
    /// Whether the client may still read what is written.
    var isActive: Bool { get }
    /// Whether the client went away; cheap and callable from any thread (a running
    /// statement asks it every few thousand steps).
    var isGone: @Sendable () -> Bool { get }
    /// What was written and not yet taken by the client; nil when it cannot be told (the
    /// connection is gone). Asked on the event loop, by a stream waiting for its piece.
    func backlog() -> EventLoopFuture<WriteBacklog>?
}

extension ReplyOutput {
    /// An output that cannot tell (a test's buffer, whose writes complete at once).
    func backlog() -> EventLoopFuture<WriteBacklog>? { nil }
}

/// The one writer of a connection: every reply to every request, each refusal, each Watch
/// event and each chunk of an export goes through it, on the channel's event loop, in the
/// order it is given. Order so holds by construction: there is no other way to the socket.
///
/// Replies are gathered and written together: after the event loop has handled every
/// connection that was ready (``flushSoon()``), when a request ends outside a read, when
/// a task begins, or once ``flushThreshold`` bytes are pending. A request's task
/// reaches this writer through its ``ReplyWriter``; a streamed reply's pieces, made on the
/// blocking pool, through ``ReplyWriter/start(_:)`` from that task, which awaits each write.
final class ConnectionWriter {
    /// How many pending bytes are written at once rather than gathered further.
    static let flushThreshold = 64 * 1024

    /// The channel's event loop: the writer is used on it only.
    let loop: any EventLoop
    /// Runs a connection's tasks on ``loop``.
    let executor: EventLoopExecutor
    /// The client's side; nil once the connection is gone.
    private var output: (any ReplyOutput)?
    /// Replies not yet written, as UTF-8 (gathered as bytes: growing a `String` piece by
    /// piece cost more than encoding the reply).
    private var pending: [UInt8] = []
    private var flushScheduled = false
    /// Called on ``loop`` when a request that is answered later (``Dispatcher/Response/running``) has ended.
    var requestEnded: () -> Void = {}
    /// The task of the request running now (``Dispatcher/task(_:_:_:)``), until it ends; the
    /// connection cancels it when it is closed at the end of shutdown's grace.
    var requestTask: Task<Void, Never>?
    /// Where group commits hand this connection's answers to ``loop`` (shared by the loop's
    /// connections); nil until its first Set or Delete.
    var commitAnswers: LoopAnswers?

    init(loop: any EventLoop, output: any ReplyOutput) {
        self.loop = loop
        self.executor = EventLoopExecutor(loop)
        self.output = output
        pending.reserveCapacity(1024)
    }

    /// Whether the client went away (see ``ReplyOutput/isGone``).
    var isGone: @Sendable () -> Bool {
        guard let output else { return { true } }
        return output.isGone
    }

    /// Whether the client may still read what is written.
    var isActive: Bool { output?.isActive ?? false }

    /// What was written and not yet taken by the client (``ReplyOutput/backlog()``).
    func backlog() -> EventLoopFuture<WriteBacklog>? { output?.backlog() }

    /// Appends `reply`; it goes out with the next flush.
    func send(_ reply: Reply) {
        reply.encode(into: &pending)
    }

    /// How many bytes are pending.
    var pendingBytes: Int { pending.count }

    /// Whether ``flushThreshold`` bytes or more are pending: they are written now rather
    /// than gathered further.
    var isFull: Bool { pending.count >= Self.flushThreshold }

    /// Writes what is pending now.
    ///
    /// - Parameter always: write even when nothing is pending, so that `promise` completes
    ///   only once everything written before is written.
    func flush(always: Bool = false, promise: EventLoopPromise<Void>? = nil) {
        guard let output, output.isActive else {
            pending.removeAll()
            promise?.fail(ClientGone())
            return
        }
        guard !pending.isEmpty || always else {
            promise?.succeed()
            return
        }
        let buffer = ByteBuffer(bytes: pending)
        // Keep a small buffer for the next replies; give a large one (an unusual burst) back.
        pending.removeAll(keepingCapacity: pending.count <= 16 * 1024)
        output.write(buffer, promise: promise)
    }

    /// Writes what is pending, and returns when it is handed to the socket.
    func flushed() -> EventLoopFuture<Void> {
        let promise = loop.makePromise(of: Void.self)
        flush(always: true, promise: promise)
        return promise.futureResult
    }

    /// Writes `bytes` (already framed replies, such as an export's chunk) after what is pending.
    func write(_ bytes: ByteBuffer) -> EventLoopFuture<Void> {
        flush()
        let promise = loop.makePromise(of: Void.self)
        guard let output else {
            promise.fail(ClientGone())
            return promise.futureResult
        }
        output.write(bytes, promise: promise)
        return promise.futureResult
    }

    /// Writes what is pending now if it is ``flushThreshold`` bytes or more, so that the
    /// channel's writability tells whether the client reads (the connection answers nothing
    /// more while it does not) before the next request of the same read is answered.
    func flushIfFull() {
        if isFull { flush() }
    }

    /// Flushes once the event loop has handled every connection that is ready now (like
    /// Redis, the daemon reads what is there first and writes the answers together), or at
    /// once when ``flushThreshold`` bytes are pending.
    func flushSoon() {
        guard !pending.isEmpty, !flushScheduled else { return }
        if isFull {
            flush()
            return
        }
        flushScheduled = true
        loop.assumeIsolated().execute { [self] in
            flushScheduled = false
            flush()
        }
    }

    /// Cancels the running request's task (shutdown's grace is over): what it awaits ends
    /// (pool work not begun, a lock, a write), and what it holds is released as it unwinds.
    func cancelRequest() {
        requestTask?.cancel()
        requestTask = nil
    }

    /// The connection is gone: nothing more is written, and writes still to come fail with ``ClientGone``.
    func detach() {
        output = nil
        pending.removeAll()
        requestEnded = {}
    }
}
