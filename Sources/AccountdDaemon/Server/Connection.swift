import AccountdProtocol
import Logging
import NIOCore

/// One client connection: answers the request lines that ``RequestFramer`` hands it, in
/// order, on the channel's event loop.
///
/// The handler is thin: it tells its ``ConnectionStateMachine`` what happened and does
/// what the machine answers. The machine decides when a request is answered, when the
/// connection reads, yields its turn or closes; this type knows how to answer a request,
/// write replies and close.
///
/// Requests that need nothing but memory (Ping, Info, Status, most Gets) are answered
/// right here, with no task and no thread hop. A Set or Delete on an open table is
/// handed to its group commit, whose callback brings the reply back to this event loop.
/// Everything else runs as a task on the same event loop.
///
/// Replies gathered while handling one read go out in one write, after the event loop
/// has handled every connection that was ready: like Redis, the daemon reads what is
/// there first and writes the answers together.
///
/// The same handler serves both framings (``Framing``): on the varlink socket it hands
/// the dispatcher varlink messages, and a `oneway` call gets no reply at all; its bytes
/// are ended with NUL by ``ReplyTerminator`` further down the pipeline.
///
/// Never throws at the client: a bad request gets an error reply, an oversized one an
/// error reply and a closed connection, and everyone else is served.
final class Connection: ChannelDuplexHandler {
    typealias InboundIn = ConnectionStateMachine.Frame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Sent down the pipeline when the daemon begins to stop.
    struct ShutdownRequested {}

    /// How long a closing connection may take to write its last replies, and how long a
    /// request may still run once the daemon is stopping, before the connection is closed
    /// regardless (a client that does not read would otherwise hold it, and shutdown, open).
    static let closingGrace = TimeAmount.seconds(10)

    private let peer: PeerCredentials
    private let dispatcher: Dispatcher
    private let hub: EventHub
    private let maximumRequestBytes: Int
    private let framing: Framing
    private let idleTimeout: TimeAmount?
    private let logger: Logger

    private var machine = ConnectionStateMachine()
    /// Replies not yet written.
    private var pending = ""
    private var flushScheduled = false
    private var watch: Task<Void, Never>?
    private var executor: EventLoopExecutor?
    /// Closes the connection once nothing was read or written for `limits.idleTimeoutSeconds`,
    /// unless a request runs or it watches (the machine decides).
    private var idle: IdleTimer?

    /// A connection from `peer`, answering through `dispatcher`; `maximumRequestBytes` is
    /// `requests.maxBytes`, quoted in `RequestTooLarge`; `framing` says how its requests are read;
    /// `idleTimeout` is `limits.idleTimeoutSeconds`, nil for none.
    init(
        peer: PeerCredentials, dispatcher: Dispatcher, hub: EventHub, maximumRequestBytes: Int, framing: Framing = .line,
        idleTimeout: TimeAmount? = nil, logger: Logger
    ) {
        self.peer = peer
        self.dispatcher = dispatcher
        self.hub = hub
        self.maximumRequestBytes = maximumRequestBytes
        self.framing = framing
        self.idleTimeout = idleTimeout
        self.logger = logger
        pending.reserveCapacity(1024)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        executor = EventLoopExecutor(context.eventLoop)
        if let idleTimeout {
            idle = IdleTimer(timeout: idleTimeout, loop: context.eventLoop) { [self] in perform(machine.idleTimerFired(), context) }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idle?.stop()
    }

    // MARK: Events

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        idle?.touch()
        machine.received(unwrapInboundIn(data))
        serve(context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // The event loop goes on to the other connections: the next read is a new turn.
        machine.beginTurn()
        scheduleFlush(context)
    }

    /// Holds reads back while the machine says so (see ``ConnectionStateMachine/mayRead(isWritable:)``).
    func read(context: ChannelHandlerContext) {
        if machine.readRequested(isWritable: context.channel.isWritable) {
            context.read()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            perform(machine.inputClosed(), context)
        case is RequestFramer.RequestBegun:
            machine.requestBegan()
        case is ShutdownRequested:
            // A request being handled finishes and is answered; the ones after it get ShuttingDown.
            closeLater(context)
            perform(machine.shutdownBegan(isWritable: context.channel.isWritable), context)
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
        idle?.stop()
        machine.closed()
        watch?.cancel()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("connection from \(peer) failed: \(error)", metadata: ["peer_uid": "\(peer.uid)"])
        machine.closed()
        context.close(promise: nil)
    }

    // MARK: Doing what the machine says

    private func perform(_ action: ConnectionStateMachine.Action, _ context: ChannelHandlerContext) {
        switch action {
        case .none: break
        case .serve: serve(context)
        case .close: finish(context)
        case .closeNow: context.close(promise: nil)
        }
    }

    /// Answers the queued requests until one runs in a task, the turn ends or the connection closes.
    private func serve(_ context: ChannelHandlerContext) {
        while true {
            switch machine.next(isWritable: context.channel.isWritable) {
            case .wait:
                return
            case .answer(let line):
                answer(line, context)
            case .refuse(let line, let refusal):
                guard let reply = reply(refusing: line, refusal) else { continue }
                append(reply)
            case .yieldTurn:
                yieldTurn(context)
                return
            case .close(let last):
                if let last, let reply = dispatcher.refuse(nil, with: reply(last)) { append(reply) }
                finish(context)
                return
            }
        }
    }

    /// Answers one request line: admitted and started by the dispatcher, run in a task
    /// when it must wait. A `oneway` call runs the same way, and its replies are dropped.
    private func answer(_ line: [UInt8], _ context: ChannelHandlerContext) {
        let call: Dispatcher.Call
        switch dispatcher.admit(line, peer: peer, framing: framing) {
        case .blank: return
        case .refused(let reply), .served(let reply):
            append(reply)
            return
        case .admitted(let admitted): call = admitted
        }
        let oneway = call.oneway
        switch dispatcher.start(call, committed: whenCommitted(call, context)) {
        case .answered(let reply):
            if !oneway { append(reply) }
        case .committing:
            machine.requestStarted()
        case .task:
            machine.requestStarted()
            startTask(call, context)
        case .watch:
            // A oneway Watch would stream to nobody.
            if !oneway { startWatch(context) }
        }
    }

    /// What a group commit calls when it committed `call`, or failed: it brings the end back
    /// to this event loop, where the dispatcher makes the reply. Only a Set or Delete can be
    /// handed to a group commit, so only theirs is made; the other requests, answered at
    /// once, cost no closure.
    private func whenCommitted(_ call: Dispatcher.Call, _ context: ChannelHandlerContext) -> @Sendable (Dispatcher.Committed) -> Void {
        switch call.command {
        case .set, .delete: break
        default: return { _ in }
        }
        let loop = context.eventLoop
        let end = NIOLoopBound(
            { [self] (committed: Dispatcher.Committed) in
                switch dispatcher.end(call, committed) {
                case .answered(let reply):
                    if !call.oneway { append(reply) }
                    finishRequest(context)
                case .retry(let retry):
                    // A switch or restore closed the account's table: a task waits for it and retries.
                    startTask(retry, context)
                }
            }, eventLoop: loop)
        return { committed in loop.execute { end.value(committed) } }
    }

    /// The reply to a request that is refused; nil for a blank line, which is no request,
    /// and for a `oneway` call. A request that is not admitted gets the reason it is not
    /// (and is counted as such); the others the refusal's.
    private func reply(refusing line: [UInt8], _ refusal: ConnectionStateMachine.Refusal) -> Reply? {
        switch dispatcher.admit(line, peer: peer, framing: framing) {
        case .blank: return nil
        case .refused(let reply): return reply
        case .served: return reply(refusal)
        case .admitted(let call): return dispatcher.refuse(call, with: reply(refusal))
        }
    }

    /// The error reply for `refusal`.
    private func reply(_ refusal: ConnectionStateMachine.Refusal) -> Reply {
        switch refusal {
        case .watching:
            return ProtocolError(.invalidRequest, "this connection is watching events; open another connection for other requests").reply
        case .shuttingDown:
            return ProtocolError(.shuttingDown, "accountd is shutting down; retry when it is back").reply
        case .requestTooLarge:
            logger.warning(
                "closed a connection from uid \(peer.uid): request over \(maximumRequestBytes) bytes", metadata: ["peer_uid": "\(peer.uid)"])
            return ProtocolError(
                .requestTooLarge, "a request may be at most \(maximumRequestBytes) bytes (requests.maxBytes); the connection is closed",
                facts: [("limit", JSONValue(maximumRequestBytes))]
            ).reply
        }
    }

    /// Handles a request that waits for something (SQLite, the disk, a lock) in a task on this event loop.
    private func startTask(_ call: Dispatcher.Call, _ context: ChannelHandlerContext) {
        flush(context)
        let transport: any ReplyTransport = call.oneway ? DroppedReplies() : ChannelTransport(channel: context.channel)
        let writer = ReplyWriter(transport)
        let dispatcher = dispatcher
        let loop = context.eventLoop
        let resume = NIOLoopBound({ [self] in finishRequest(context) }, eventLoop: loop)
        Task(executorPreference: executor) {
            do {
                try await dispatcher.run(call, writer: writer)
                try await writer.flush()
            } catch {
                // The client went away; the channel is closing.
            }
            loop.execute { resume.value() }
        }
    }

    /// The running request is answered: carries on with the requests behind it.
    private func finishRequest(_ context: ChannelHandlerContext) {
        machine.requestFinished()
        carryOn(context)
    }

    /// Lets other connections run, then carries on with the requests already read.
    private func yieldTurn(_ context: ChannelHandlerContext) {
        flush(context)
        context.eventLoop.assumeIsolated().execute { [self] in
            machine.turnResumed()
            carryOn(context)
        }
    }

    /// Goes on once the connection may again: answers the requests waiting, writes, and reads.
    ///
    /// It runs outside a read (a request ended, the channel became writable, a turn
    /// resumed), so no other reply of this connection can join these: they are written now.
    private func carryOn(_ context: ChannelHandlerContext) {
        machine.beginTurn()
        serve(context)
        if machine.state != .closing { flush(context) }
        if machine.releaseHeldRead(isWritable: context.channel.isWritable) {
            context.read()
        }
    }

    /// Closes the connection once every reply given so far is written, or after the grace
    /// period if the client does not read them.
    private func finish(_ context: ChannelHandlerContext) {
        watch?.cancel()
        closeLater(context)
        // Always a write, even an empty one: its promise completes only after the replies
        // queued before it (by earlier flushes or by a task) are written.
        let buffer = context.channel.allocator.buffer(string: pending)
        pending.removeAll()
        idle?.touch()
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

    private func startWatch(_ context: ChannelHandlerContext) {
        guard machine.watchStarted() == .serve else {
            finish(context)
            return
        }
        flush(context)
        // A watcher that is not an admin hears only of the accounts it may read.
        let events = hub.subscribe(filter: dispatcher.watchFilter(for: peer))
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

    /// A reply written by a task or a watch, from the channel's end of the pipeline.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        idle?.touch()
        context.write(data, promise: promise)
    }

    private func append(_ reply: Reply) {
        reply.encode(into: &pending)
    }

    /// Flushes once the event loop has handled every connection that is ready now.
    private func scheduleFlush(_ context: ChannelHandlerContext) {
        guard !pending.isEmpty, !flushScheduled, machine.state != .closing else { return }
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
        idle?.touch()
        // Keep a small buffer for the next replies; give a large one (an unusual burst) back.
        pending.removeAll(keepingCapacity: pending.utf8.count <= 16 * 1024)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}
