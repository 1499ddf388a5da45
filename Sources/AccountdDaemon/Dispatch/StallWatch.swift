import NIOCore

/// What a connection has written that its client has not taken yet: the bytes NIO still
/// holds for the socket, and what the kernel holds in the socket's send queue
/// (`SO_MEMINFO`'s `SK_MEMINFO_WMEM_ALLOC`, in the kernel's units). Either changes only when
/// the client reads, while a stream waits for a piece and writes nothing else.
struct WriteBacklog: Equatable, Sendable {
    /// Bytes NIO has not handed to the kernel yet.
    var inChannel: Int
    /// The socket's send queue: freed as the client reads, a kernel buffer (at most about
    /// 36 KiB on a Unix socket) at a time.
    var inKernel: Int
}

/// Ends a streamed reply's wait for its piece (``ReplyWriter/written(_:within:)``) when the
/// client took nothing of it for the stall bound: progress, not the whole piece, is what is
/// measured. Every `bound / 8` it looks at the connection's ``WriteBacklog``; any change is
/// progress, and the wait fails with ``ReplyStalled`` once none was seen for `bound`. A
/// client that reads slowly but steadily is so never cut off; a silent one is, within
/// `bound` and two eighths.
///
/// Used on the connection's event loop only; a timer on the loop, no thread waits.
final class StallWatch {
    private let loop: any EventLoop
    private let bound: TimeAmount
    /// Reads the backlog; nil when the connection is gone (no progress then).
    private let measure: () -> EventLoopFuture<WriteBacklog>?
    private let stalled: () -> Void
    private var last: WriteBacklog?
    private var lastProgress: NIODeadline
    private var timer: Scheduled<Void>?
    private var stopped = false

    /// Watches from now; calls `stalled` once, on the loop, when no progress was seen for `bound`.
    init(loop: any EventLoop, bound: Duration, measure: @escaping () -> EventLoopFuture<WriteBacklog>?, stalled: @escaping () -> Void) {
        let (seconds, attoseconds) = bound.components
        self.loop = loop
        self.bound = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        self.measure = measure
        self.stalled = stalled
        lastProgress = .now()
        // The first check takes the baseline: a piece written at once (a client that reads)
        // costs no look at the socket.
        schedule()
    }

    /// The piece was written, or the wait ended otherwise: no more checks.
    func stop() {
        stopped = true
        timer?.cancel()
        timer = nil
    }

    private var step: TimeAmount { .nanoseconds(max(bound.nanoseconds / 8, 1_000_000)) }

    private func schedule() {
        guard !stopped else { return }
        timer = loop.assumeIsolated().scheduleTask(in: step) { [self] in check() }
    }

    private func check() {
        guard !stopped else { return }
        guard let measured = measure() else { return decide(nil) }
        measured.assumeIsolated().whenComplete { [self] result in decide(try? result.get()) }
    }

    private func decide(_ backlog: WriteBacklog?) {
        guard !stopped else { return }
        let now = NIODeadline.now()
        if let backlog, backlog != last {
            last = backlog
            lastProgress = now
        }
        if now - lastProgress >= bound {
            stop()
            stalled()
        } else {
            schedule()
        }
    }
}
