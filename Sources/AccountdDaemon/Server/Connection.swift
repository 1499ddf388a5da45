import AccountdProtocol
import Logging
import NIOCore

/// One client connection: hands the request lines that ``RequestFramer`` frames, in order,
/// to the daemon's one responder (``Dispatcher/respond(to:peer:framing:writer:)``), on the
/// channel's event loop.
///
/// The handler is thin: it tells its ``ConnectionStateMachine`` what happened and does
/// what the machine answers. The machine decides when a request is answered, when the
/// connection reads, yields its turn or closes; the responder decides how a request runs
/// (at once, in a group commit, in a task); this type carries their decisions out.
///
/// Every byte the connection sends goes through its one ``ConnectionWriter``: replies
/// answered at once, a group commit's and a task's, an export's chunks, Watch events and
/// refusals. Replies gathered while handling one read go out in one write, after the event
/// loop has handled every connection that was ready: like Redis, the daemon reads what is
/// there first and writes the answers together.
///
/// The same handler serves both framings (``Framing``): on the varlink socket a `oneway`
/// call gets no reply at all, and the bytes are ended with NUL by ``ReplyTerminator``
/// further down the pipeline.
///
/// Never throws at the client: a bad request gets an error reply, an oversized one an
/// error reply and a closed connection, and everyone else is served.
final class Connection: ChannelDuplexHandler, ReplyOutput {
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
    /// Whether ``serve(_:)`` is answering requests now.
    private var serving = false
    /// The one writer of every reply; made when the handler is added.
    private var writer: ConnectionWriter!
    /// The channel's context, for ``ReplyOutput``; nil once the handler is removed.
    private var context: ChannelHandlerContext?
    private var watch: Task<Void, Never>?
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
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        writer = ConnectionWriter(loop: context.eventLoop, output: self)
        writer.requestEnded = { [unowned self] in finishRequest(context) }
        if let idleTimeout {
            idle = IdleTimer(timeout: idleTimeout, loop: context.eventLoop) { [self] in perform(machine.idleTimerFired(), context) }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idle?.stop()
        writer.detach()
        self.context = nil
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
        if machine.state != .closing { writer.flushSoon() }
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

    /// Answers the queued requests until one runs on, the turn ends or the connection closes.
    ///
    /// Never twice at once: a write inside it (a task's start writes what is pending) can
    /// make the channel unwritable and writable again, whose event comes back here through
    /// ``carryOn(_:)`` before the request being answered has started. That inner call does
    /// nothing: the loop below asks the machine again after each request, so it goes on with
    /// the requests behind once the one it answers has started, in order.
    private func serve(_ context: ChannelHandlerContext) {
        guard !serving else { return }
        serving = true
        defer { serving = false }
        while true {
            switch machine.next(isWritable: context.channel.isWritable) {
            case .wait:
                return
            case .answer(let line):
                switch dispatcher.respond(to: line, peer: peer, framing: framing, writer: writer) {
                case .answered: writer.flushIfFull()
                case .running: machine.requestStarted()
                case .watching: startWatch(context)
                }
            case .refuse(let line, let refusal):
                dispatcher.refuse(refused(refusal), line: line, framing: framing, writer: writer)
            case .yieldTurn:
                yieldTurn(context)
                return
            case .close(let last):
                if let last { dispatcher.refuse(refused(last), line: nil, framing: framing, writer: writer) }
                finish(context)
                return
            }
        }
    }

    /// The error of `refusal`; one over the size limit is logged too.
    private func refused(_ refusal: ConnectionStateMachine.Refusal) -> RefusedRequest {
        if refusal == .requestTooLarge {
            logger.warning(
                "closed a connection from uid \(peer.uid): request over \(maximumRequestBytes) bytes", metadata: ["peer_uid": "\(peer.uid)"])
        }
        return RefusedRequest(refusal: refusal, maximumRequestBytes: maximumRequestBytes)
    }

    /// The running request is answered: carries on with the requests behind it.
    private func finishRequest(_ context: ChannelHandlerContext) {
        machine.requestFinished()
        carryOn(context)
    }

    /// How long a connection that used its turn waits before it carries on. Not zero: the
    /// event loop runs the tasks queued while it runs tasks before it looks at its sockets
    /// again, so a turn resumed by a queued task would come before every other connection's
    /// reads; a timer's turn comes after them. With one event loop for every connection, a
    /// client pipelining pings otherwise held another's ping for 160 ms at the median.
    static let turnPause = TimeAmount.microseconds(50)

    /// Lets other connections run (their sockets are read first), then carries on with the
    /// requests already read.
    private func yieldTurn(_ context: ChannelHandlerContext) {
        writer.flush()
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.turnPause) { [self] in
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
        if machine.state != .closing { writer.flush() }
        if machine.releaseHeldRead(isWritable: context.channel.isWritable) {
            context.read()
        }
    }

    /// Closes the connection once every reply given so far is written, or after the grace
    /// period if the client does not read them.
    private func finish(_ context: ChannelHandlerContext) {
        watch?.cancel()
        closeLater(context)
        // Always a write, even an empty one: its promise completes only after every reply
        // written before it.
        idle?.touch()
        let written = context.eventLoop.makePromise(of: Void.self)
        writer.flush(always: true, promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// Closes the connection after ``closingGrace``, whatever it is doing then: a request still
    /// running then (a statement inside one long SQLite step) is answered `ShuttingDown` and its
    /// task cancelled, so that the daemon's stop waits for neither.
    private func closeLater(_ context: ChannelHandlerContext) {
        let deadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.closingGrace) { [self] in
            if case .running = machine.state {
                dispatcher.refuse(refused(.shuttingDown), line: nil, framing: framing, writer: writer)
                writer.flush()
            }
            writer.cancelRequest()
            context.close(promise: nil)
        }
        context.channel.closeFuture.whenComplete { _ in deadline.cancel() }
    }

    // MARK: Watch

    /// Streams events to the client through the connection's writer, each written before the next is taken.
    private func startWatch(_ context: ChannelHandlerContext) {
        guard machine.watchStarted() == .serve else {
            finish(context)
            return
        }
        writer.flush()
        // A watcher that is not an admin hears only of the accounts it may read.
        let events = hub.subscribe(filter: dispatcher.watchFilter(for: peer))
        let replies = ReplyWriter(writer)
        watch = Task(executorPreference: writer.executor) {
            defer { events.finish() }
            while let event = await events.next() {
                do {
                    try await replies.deliver(Reply(parameters: event, continues: true))
                } catch {
                    return
                }
            }
        }
    }

    // MARK: ReplyOutput

    /// Writes the writer's bytes down the pipeline (through ``ReplyTerminator`` on the varlink socket).
    func write(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ClientGone())
            return
        }
        idle?.touch()
        context.writeAndFlush(wrapOutboundOut(bytes), promise: promise)
    }

    var isActive: Bool { context?.channel.isActive ?? false }

    /// `SO_MEMINFO` (Linux); Swift's Glibc module does not export it.
    static let memoryInfoOption: CInt = 55
    /// The first four of `SO_MEMINFO`'s figures; the third is the send queue (`SK_MEMINFO_WMEM_ALLOC`).
    typealias MemoryInfo = InlineArray<4, UInt32>

    /// NIO's unwritten bytes and the socket's send queue (``WriteBacklog``).
    func backlog() -> EventLoopFuture<WriteBacklog>? {
        guard let channel = context?.channel, channel.isActive else { return nil }
        let inChannel = (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(WriteBacklog(inChannel: inChannel, inKernel: 0))
        }
        return provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: Self.memoryInfoOption))
            .map { (info: MemoryInfo) in WriteBacklog(inChannel: inChannel, inKernel: Int(info[2])) }
    }

    var isGone: @Sendable () -> Bool {
        guard let channel = context?.channel else { return { true } }
        return { !channel.isActive }
    }
}
