import NIOCore

/// The lifecycle of one client connection, as a value with one method per event.
///
/// ``Connection`` feeds it what happens on the channel (a request framed or begun, a request
/// finished, the client closed its side, the daemon began to stop, the idle timer fired)
/// and does what it answers. Every decision about *when* a request is answered, when the
/// connection reads and when it closes is made here, in one `switch` per event, so the
/// rules can be read in one place and tested without a channel.
///
/// The rules it keeps:
/// - requests are answered one at a time, in the order they arrived;
/// - while a request runs, at most ``readAheadBytes`` of the requests behind it are read;
/// - nothing is answered or read while the client does not read its replies (the channel
///   is not writable);
/// - after ``requestsPerTurn`` requests the connection lets others run, then carries on;
/// - once the client closed its side, what it sent is answered, then the connection closes;
/// - once the daemon stops, a running request finishes and is answered; every request
///   after it that was read, and one the client had begun, gets `ShuttingDown`; then the
///   connection closes.
struct ConnectionStateMachine: Sendable {
    /// How many bytes of requests a connection reads ahead while one of its requests is in
    /// progress. Reading on (rather than stopping and restarting reads for every request,
    /// two `epoll_ctl` calls) is cheaper for the usual client with one request in flight.
    static let readAheadBytes = 64 * 1024
    /// How many requests one connection may have answered in a turn before others get theirs.
    static let requestsPerTurn = 32

    /// Where a connection is in its life.
    indirect enum State: Equatable, Sendable {
        /// Answers the requests that arrive, in order, as soon as they arrive.
        case idle(InputEnd)
        /// A request runs in a task or waits for its group commit; the requests behind it
        /// wait, and at most ``readAheadBytes`` of them are read.
        case running(InputEnd)
        /// Streams events to the client. Requests that arrive are refused; the client
        /// closing its side or the daemon stopping ends the connection.
        case watching
        /// Used its turn: reads nothing and answers nothing until the event loop comes back
        /// to it, then goes back to `resume` (``idle(_:)`` or ``watching``).
        case yielded(resume: State)
        /// Writing its last replies; it then closes. Nothing more is read or answered.
        case closing
    }

    /// Whether more requests can come, and what the ones still to come get.
    enum InputEnd: Equatable, Sendable {
        /// The client may send more.
        case open
        /// The client closed its side: what it sent is answered, then the connection closes.
        case clientClosed
        /// The daemon is stopping: each request read, and one the client had begun, gets
        /// `ShuttingDown`, then the connection closes.
        case stopping
    }

    /// What arrives from the framer: a request line, or the end of framing.
    enum Frame: Equatable, Sendable {
        /// A request line, without its line ending.
        case request([UInt8])
        /// A line over `requests.maxBytes`: the stream has lost its framing.
        case tooLarge
    }

    /// Why a request is refused rather than answered: the error it gets.
    enum Refusal: Equatable, Sendable {
        /// `InvalidRequest`: the connection is watching events.
        case watching
        /// `ShuttingDown`: the daemon is stopping.
        case shuttingDown
        /// `RequestTooLarge`: a line over `requests.maxBytes`; the stream lost its framing.
        case requestTooLarge
    }

    /// What ``next(isWritable:)`` asks the connection to do.
    enum Step: Equatable, Sendable {
        /// Answer this request (which may start a task, a change or a Watch).
        case answer([UInt8])
        /// Refuse this request with the error of `Refusal`, then carry on.
        case refuse([UInt8], Refusal)
        /// Let other connections run, then call ``turnResumed()`` and carry on.
        case yieldTurn
        /// Write what is pending, then this last refusal if any (to a request without a
        /// line: one too large, or one begun but not finished), then close.
        case close(Refusal?)
        /// Nothing to do until the next event.
        case wait
    }

    /// What an event other than a framed request asks the connection to do.
    enum Action: Equatable, Sendable {
        /// Nothing now.
        case none
        /// Answer what can be answered (call ``next(isWritable:)``).
        case serve
        /// Write what is pending, then close.
        case close
        /// Close at once: the replies could never be written.
        case closeNow
    }

    private(set) var state: State = .idle(.open)
    /// Framed requests not yet answered, oldest first.
    private var queue = CircularBuffer<Frame>()
    /// The bytes of the requests in ``queue``, line endings counted.
    private(set) var queuedBytes = 0
    /// The stream lost its framing (a ``Frame/tooLarge`` is queued): nothing more is worth reading.
    private var framingLost = false
    /// A read was held back, to be issued once reading is allowed again.
    private var readHeld = false
    /// The client has begun a request: its first bytes arrived, its newline not yet. A
    /// stopping connection owes it `ShuttingDown`.
    private var requestBegun = false
    /// Requests answered in this turn, since ``beginTurn()``.
    private var answeredThisTurn = 0

    /// A new connection: idle, its input open, nothing queued.
    init() {}

    // MARK: Requests

    /// A request (or the end of framing) arrived. Nothing is queued once the connection closes.
    mutating func received(_ frame: Frame) {
        if state == .closing { return }
        // Lines arrive in order: this one is the request that had begun, if one had.
        requestBegun = false
        switch frame {
        case .request(let line): queuedBytes += line.count + 1
        case .tooLarge: framingLost = true
        }
        queue.append(frame)
    }

    /// The client began a request: bytes arrived after its last line, without a newline yet.
    mutating func requestBegan() {
        requestBegun = true
    }

    /// A new turn begins: the event loop came back to this connection (a read burst ended,
    /// a request finished, the channel became writable, a yielded turn resumed), so the
    /// count of requests answered in a turn starts again.
    mutating func beginTurn() {
        answeredThisTurn = 0
    }

    /// The next thing to do with the queued requests.
    ///
    /// - Parameter isWritable: whether the channel takes more replies now.
    mutating func next(isWritable: Bool) -> Step {
        switch state {
        case .running, .yielded, .closing:
            return .wait
        case .watching:
            guard isWritable, !queue.isEmpty else { return .wait }
            if answeredThisTurn >= Self.requestsPerTurn { return yield() }
            switch dequeue() {
            case .request(let line):
                answeredThisTurn += 1
                return .refuse(line, .watching)
            case .tooLarge: return close(.requestTooLarge)
            }
        case .idle(let end):
            guard isWritable else { return .wait }
            guard !queue.isEmpty else {
                switch end {
                case .open: return .wait
                case .clientClosed: return close(nil)
                case .stopping: return close(requestBegun ? .shuttingDown : nil)
                }
            }
            if answeredThisTurn >= Self.requestsPerTurn { return yield() }
            switch dequeue() {
            case .tooLarge: return close(.requestTooLarge)
            case .request(let line):
                answeredThisTurn += 1
                return end == .stopping ? .refuse(line, .shuttingDown) : .answer(line)
            }
        }
    }

    /// The request just answered started a task or a group-commit change.
    mutating func requestStarted() {
        switch state {
        case .idle(let end): state = .running(end)
        case .closing: break  // closed under it (a write failed as the request began)
        case .running, .watching, .yielded:
            preconditionFailure("a request started while the connection was \(state)")
        }
    }

    /// The running request is answered. The caller then serves the requests behind it.
    mutating func requestFinished() {
        switch state {
        case .running(let end): state = .idle(end)
        case .closing: break  // closed under it (error, grace period)
        case .idle, .watching, .yielded:
            preconditionFailure("a request finished while the connection was \(state)")
        }
    }

    /// The request just answered was a Watch, now streaming.
    ///
    /// - Returns: ``Action/close`` when the client had already closed its side: nobody
    ///   would read the events.
    mutating func watchStarted() -> Action {
        switch state {
        case .idle(.open):
            state = .watching
            return .serve
        case .idle:
            state = .closing
            return .close
        case .closing:
            return .close  // closed under it
        case .running, .watching, .yielded:
            preconditionFailure("a Watch started while the connection was \(state)")
        }
    }

    /// The event loop came back to a connection that yielded its turn.
    mutating func turnResumed() {
        guard case .yielded(let resume) = state else { return }  // closed meanwhile
        state = resume
        answeredThisTurn = 0
    }

    // MARK: Lifecycle events

    /// The client closed its side: no more requests will come.
    mutating func inputClosed() -> Action {
        // What the client had begun came as its last request, or was dropped as too large.
        requestBegun = false
        switch state {
        case .idle(let end): state = .idle(Self.closedByClient(end))
        case .running(let end): state = .running(Self.closedByClient(end))
        case .yielded(.idle(let end)): state = .yielded(resume: .idle(Self.closedByClient(end)))
        case .watching, .yielded:
            state = .closing
            return .close
        case .closing: return .none
        }
        return .serve
    }

    /// The daemon began to stop.
    ///
    /// A running request goes on; reads go on too (within the read-ahead bound), so that
    /// what the client sends meanwhile gets `ShuttingDown` rather than a silent close.
    ///
    /// - Parameter isWritable: whether the channel takes more replies now.
    mutating func shutdownBegan(isWritable: Bool) -> Action {
        switch state {
        case .idle(let end), .yielded(.idle(let end)):
            if end == .stopping { return .none }
            guard isWritable else {
                // The client is not reading its replies: they would never be written.
                state = .closing
                return .closeNow
            }
            if case .yielded = state {
                state = .yielded(resume: .idle(.stopping))
                return .none
            }
            state = .idle(.stopping)
            return .serve
        case .running(let end):
            if end == .stopping { return .none }
            state = .running(.stopping)
            return .none
        case .watching, .yielded:
            state = .closing
            return .close
        case .closing:
            return .none
        }
    }

    /// The idle timer fired (nothing was read or written for the idle timeout).
    ///
    /// - Returns: ``Action/closeNow`` unless a request runs or the connection watches.
    mutating func idleTimerFired() -> Action {
        switch state {
        case .idle, .yielded(.idle):
            state = .closing
            return .closeNow
        case .running, .watching, .yielded, .closing:
            return .none
        }
    }

    /// The channel closed or failed: nothing more is done.
    mutating func closed() {
        state = .closing
        queue.removeAll()
        queuedBytes = 0
    }

    // MARK: Reading

    /// Whether the connection may read more now.
    func mayRead(isWritable: Bool) -> Bool {
        guard isWritable else { return false }
        switch state {
        case .idle, .watching: return true
        case .running: return !framingLost && queuedBytes < Self.readAheadBytes
        case .yielded, .closing: return false
        }
    }

    /// The channel asks to read: true to read now; false holds the read back until
    /// ``releaseHeldRead(isWritable:)`` allows it.
    mutating func readRequested(isWritable: Bool) -> Bool {
        guard mayRead(isWritable: isWritable) else {
            readHeld = true
            return false
        }
        return true
    }

    /// True when a held-back read may now be issued (it is then no longer held).
    mutating func releaseHeldRead(isWritable: Bool) -> Bool {
        guard readHeld, mayRead(isWritable: isWritable) else { return false }
        readHeld = false
        return true
    }

    // MARK: Helpers

    private mutating func dequeue() -> Frame {
        let frame = queue.removeFirst()
        if case .request(let line) = frame { queuedBytes -= line.count + 1 }
        return frame
    }

    private mutating func yield() -> Step {
        state = .yielded(resume: state)
        return .yieldTurn
    }

    private mutating func close(_ last: Refusal?) -> Step {
        state = .closing
        return .close(last)
    }

    /// A stopping daemon's `ShuttingDown` wins over the client's end of input.
    private static func closedByClient(_ end: InputEnd) -> InputEnd {
        end == .stopping ? end : .clientClosed
    }
}
