import AccountdProtocol
import Logging
import NIOCore

/// One client connection: reads request lines and answers them in order, on the
/// channel's event loop.
///
/// Requests that need nothing but memory (Ping, Info, Status, most Gets) are answered
/// right here, with no task and no thread hop. A Set or Delete on an open table is
/// handed to its group commit, whose callback brings the reply back to this event loop.
/// Everything else runs as a task on the same event loop. While a request is in
/// progress, the connection answers nothing else and reads at most ``readAheadBytes``
/// more, so a client cannot pile up work, and its next requests wait their turn. Nor
/// does it read while its replies are not being read (the channel is not writable): a
/// client that only sends cannot make the daemon buffer replies without end.
///
/// Replies gathered while handling one read go out in one write, after the event loop
/// has handled every connection that was ready: like Redis, the daemon reads what is
/// there first and writes the answers together.
///
/// Never throws at the client: a bad request gets an error reply, an oversized one an
/// error reply and a closed connection, and everyone else is served.
final class Connection: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Sent down the pipeline when the daemon begins to stop.
    struct ShutdownRequested {}

    /// How many bytes of requests a connection reads ahead while one of its requests is in
    /// progress. Reading on (rather than stopping and restarting reads for every request,
    /// two `epoll_ctl` calls) is cheaper for the usual client with one request in flight.
    static let readAheadBytes = 64 * 1024
    /// How many requests one connection may have answered in a turn before others get theirs.
    static let requestsPerTurn = 32
    /// How long a closing connection may take to write its last replies, and how long a
    /// request may still run once the daemon is stopping, before the connection is closed
    /// regardless (a client that does not read would otherwise hold it, and shutdown, open).
    static let closingGrace = TimeAmount.seconds(10)
    /// The answer to each request read once the daemon is stopping.
    static let shuttingDown = ProtocolError(.shuttingDown, "accountd is shutting down; retry when it is back").reply

    private let peer: PeerCredentials
    private let activity: ConnectionActivity
    private let dispatcher: Dispatcher
    private let hub: EventHub
    private let maximumRequestBytes: Int
    private let logger: Logger

    private var framer: LineFramer
    /// Replies not yet written.
    private var pending = ""
    private var flushScheduled = false
    /// A request is in progress (in a task, or a change waiting for its commit); nothing else
    /// is answered, and at most ``readAheadBytes`` more are read, until it ends.
    private var busy = false
    /// This connection used its turn; it carries on in a task queued behind the others.
    private var yielded = false
    /// A read was held back (see ``read(context:)``).
    private var readHeld = false
    private var inputClosed = false
    private var stopping = false
    private var closing = false
    private var watch: Task<Void, Never>?
    private var executor: EventLoopExecutor?

    init(
        peer: PeerCredentials, activity: ConnectionActivity, dispatcher: Dispatcher, hub: EventHub, maximumRequestBytes: Int,
        logger: Logger
    ) {
        self.peer = peer
        self.activity = activity
        self.dispatcher = dispatcher
        self.hub = hub
        self.maximumRequestBytes = maximumRequestBytes
        self.logger = logger
        framer = LineFramer(maximumLineLength: maximumRequestBytes)
        pending.reserveCapacity(1024)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        executor = EventLoopExecutor(context.eventLoop)
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        framer.append(unwrapInboundIn(data).readableBytesView)
        serve(context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        scheduleFlush(context)
    }

    /// Holds reads back while the connection gave up its turn or the client is not reading
    /// its replies, and while a request is in progress once ``readAheadBytes`` wait unanswered.
    func read(context: ChannelHandlerContext) {
        guard mayRead(context) else {
            readHeld = true
            return
        }
        context.read()
    }

    private func mayRead(_ context: ChannelHandlerContext) -> Bool {
        !yielded && !closing && context.channel.isWritable && !(busy && framer.bufferedCount >= Self.readAheadBytes)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            inputClosed = true
            if watch != nil {
                finish(context)
            } else {
                serve(context)
            }
        case is ShutdownRequested:
            // A request being handled finishes and is answered; the next gets ShuttingDown.
            stopping = true
            closeLater(context)
            if watch != nil {
                finish(context)
            } else if !busy, !context.channel.isWritable {
                // The client is not reading its replies: they would never be written.
                closing = true
                context.close(promise: nil)
            } else {
                serve(context)
            }
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            carryOn(context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        watch?.cancel()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("connection from \(peer) failed: \(error)", metadata: ["peer_uid": "\(peer.uid)"])
        closing = true
        context.close(promise: nil)
    }

    // MARK: Serving

    /// Answers the complete lines that have arrived, until one needs a task or the turn ends.
    private func serve(_ context: ChannelHandlerContext) {
        var answered = 0
        // Replies wait in the channel while the client is not reading them: answer nothing more until it does.
        while !busy, !yielded, !closing, context.channel.isWritable {
            if answered == Self.requestsPerTurn {
                yieldTurn(context)
                return
            }
            let line: [UInt8]
            do {
                guard let next = try framer.nextLine() else { break }
                line = next
            } catch {
                refuseOversized(context)
                return
            }
            answered += 1
            if stopping {
                append(Self.shuttingDown)
                finish(context)
                return
            }
            answer(line, context)
        }
        if !busy, !yielded, !closing, context.channel.isWritable, inputClosed || stopping {
            finishInput(context)
        }
    }

    private func answer(_ line: [UInt8], _ context: ChannelHandlerContext) {
        let request: Request
        do {
            guard let decoded = try Request.decode(line) else { return }
            request = decoded
        } catch {
            append(error.reply)
            return
        }
        if watch != nil {
            append(ProtocolError(.invalidRequest, "this connection is watching events; open another connection for other requests").reply)
            return
        }
        if request.method == .watch {
            startWatch(request, context)
            return
        }
        if let reply = dispatcher.immediateReply(to: request, peer: peer) {
            append(reply)
            return
        }
        if startChange(request, context) { return }
        startTask(request, context)
    }

    /// Starts a Set or Delete on an open table without a task: the connection waits, busy,
    /// for the commit's callback. False when the request needs a task.
    private func startChange(_ request: Request, _ context: ChannelHandlerContext) -> Bool {
        let loop = context.eventLoop
        let committed = NIOLoopBound({ [self] (end: Dispatcher.ChangeEnd) in
            activity.end()
            busy = false
            let reply: Reply
            switch end {
            case .answered(let answer): reply = answer
            case .retry(let retry):
                // A switch or restore closed the account's table: a task waits for it and retries.
                startTask(retry, context)
                return
            }
            append(reply)
            carryOn(context)
        }, eventLoop: loop)
        switch dispatcher.startChange(request, peer: peer, done: { end in loop.execute { committed.value(end) } }) {
        case .needsTask:
            return false
        case .replied(let reply):
            append(reply)
            return true
        case .started:
            busy = true
            activity.begin()
            return true
        }
    }

    /// Handles a request that waits for something (SQLite, the disk, a lock) in a task on this event loop.
    private func startTask(_ request: Request, _ context: ChannelHandlerContext, then after: (() -> Void)? = nil) {
        busy = true
        activity.begin()
        flush(context)
        let writer = ReplyWriter(ChannelTransport(channel: context.channel))
        let dispatcher = dispatcher
        let peer = peer
        let loop = context.eventLoop
        let resume = NIOLoopBound({ [self] in
            activity.end()
            busy = false
            if let after {
                after()
            } else {
                carryOn(context)
            }
        }, eventLoop: loop)
        Task(executorPreference: executor) {
            do {
                try await dispatcher.handle(request, peer: peer, writer: writer)
                try await writer.flush()
            } catch {
                // The client went away; the channel is closing.
            }
            loop.execute { resume.value() }
        }
    }

    /// Lets other connections run, then carries on with the lines already read.
    private func yieldTurn(_ context: ChannelHandlerContext) {
        yielded = true
        flush(context)
        context.eventLoop.assumeIsolated().execute { [self] in
            yielded = false
            carryOn(context)
        }
    }

    /// Goes on once the connection may again: answers the lines waiting, writes, and reads.
    private func carryOn(_ context: ChannelHandlerContext) {
        serve(context)
        scheduleFlush(context)
        releaseHeldRead(context)
    }

    private func releaseHeldRead(_ context: ChannelHandlerContext) {
        guard readHeld, mayRead(context) else { return }
        readHeld = false
        context.read()
    }

    private func refuseOversized(_ context: ChannelHandlerContext) {
        append(
            ProtocolError(
                .requestTooLarge, "a request may be at most \(maximumRequestBytes) bytes (requests.maxBytes); the connection is closed",
                facts: [("limit", JSONValue(maximumRequestBytes))]
            ).reply)
        logger.warning(
            "closed a connection from uid \(peer.uid): request over \(maximumRequestBytes) bytes", metadata: ["peer_uid": "\(peer.uid)"])
        finish(context)
    }

    /// The client closed its side, or the daemon is stopping: a last request without its
    /// newline still counts, then the connection closes once everything is written.
    private func finishInput(_ context: ChannelHandlerContext) {
        let rest = framer.remainder
        framer = LineFramer(maximumLineLength: maximumRequestBytes)
        guard !rest.isEmpty, rest.count <= maximumRequestBytes, watch == nil else {
            finish(context)
            return
        }
        if stopping {
            append(Self.shuttingDown)
            finish(context)
            return
        }
        do {
            guard let request = try Request.decode(rest), request.method != .watch else {
                finish(context)
                return
            }
            if let reply = dispatcher.immediateReply(to: request, peer: peer) {
                append(reply)
            } else {
                startTask(request, context) { [self] in finish(context) }
                return
            }
        } catch {
            append(error.reply)
        }
        finish(context)
    }

    /// Closes the connection once every reply given so far is written, or after the grace
    /// period if the client does not read them.
    private func finish(_ context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        watch?.cancel()
        closeLater(context)
        // Always a write, even an empty one: its promise completes only after the replies
        // queued before it (by earlier flushes or by a task) are written.
        let buffer = context.channel.allocator.buffer(string: pending)
        pending.removeAll()
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// Closes the connection after ``closingGrace``, whatever it is doing then.
    private func closeLater(_ context: ChannelHandlerContext) {
        let deadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.closingGrace) {
            context.close(promise: nil)
        }
        context.channel.closeFuture.whenComplete { _ in deadline.cancel() }
    }

    // MARK: Watch

    private func startWatch(_ request: Request, _ context: ChannelHandlerContext) {
        guard request.more else {
            append(ProtocolError(.expectedMore, "Watch streams events; send it with \"more\": true").reply)
            return
        }
        flush(context)
        activity.begin()  // a watcher is never idle
        let events = hub.subscribe()
        let channel = context.channel
        watch = Task(executorPreference: executor) {
            defer { events.finish() }
            while let event = await events.next() {
                let reply = Reply(parameters: event, continues: true)
                do {
                    try await channel.writeAndFlush(ByteBuffer(string: reply.encoded())).get()
                } catch {
                    return
                }
            }
        }
    }

    // MARK: Writing

    private func append(_ reply: Reply) {
        reply.encode(into: &pending)
    }

    /// Flushes once the event loop has handled every connection that is ready now.
    private func scheduleFlush(_ context: ChannelHandlerContext) {
        guard !pending.isEmpty, !flushScheduled, !closing else { return }
        if pending.utf8.count >= ReplyWriter.flushThreshold {
            flush(context)
            return
        }
        flushScheduled = true
        context.eventLoop.assumeIsolated().execute { [self] in
            flushScheduled = false
            flush(context)
        }
    }

    private func flush(_ context: ChannelHandlerContext) {
        guard !pending.isEmpty, context.channel.isActive else { return }
        let buffer = context.channel.allocator.buffer(string: pending)
        // Keep a small buffer for the next replies; give a large one (an unusual burst) back.
        pending.removeAll(keepingCapacity: pending.utf8.count <= 16 * 1024)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}
