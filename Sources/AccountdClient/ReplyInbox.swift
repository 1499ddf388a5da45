import AccountdProtocol
import Synchronization

/// The lines read from the daemon, on their way from the connection's event loop
/// (``ReplyFramer``) to the client that takes them, a read's worth at a time.
///
/// A bounded queue: once ``capacity`` reads wait to be taken, ``offer(_:)`` says so and the
/// framer stops the channel's reads; the take that makes room calls back (``whenRoom(_:)``)
/// and reads resume. So a client that stops taking lines stops the reading, and then the
/// daemon, within a bounded amount of memory. The event loop never waits here, and the
/// client suspends only when nothing is queued.
final class ReplyInbox: Sendable {
    /// How many reads may wait to be taken before reading pauses.
    static let capacity = 16

    private struct State {
        var reads: [[ArraySlice<UInt8>]] = []
        var first = 0
        /// The client waiting for lines.
        var taker: CheckedContinuation<[ArraySlice<UInt8>]?, any Error>?
        /// Whether reading paused because the queue was full.
        var paused = false
        /// Called when a paused reader may go on.
        var room: (@Sendable () -> Void)?
        /// Why the lines ended: nil while they go on; `.success` at the end of the connection.
        var end: Result<Void, any Error>?

        var count: Int { reads.count - first }

        /// The oldest queued read, and the callback to call when taking it made room.
        mutating func pop() -> (lines: [ArraySlice<UInt8>], room: (@Sendable () -> Void)?) {
            let read = reads[first]
            first += 1
            if first == reads.count {
                reads.removeAll(keepingCapacity: true)
                first = 0
            }
            guard paused, count < ReplyInbox.capacity else { return (read, nil) }
            paused = false
            return (read, room)
        }
    }

    private let state = Mutex(State())

    /// Sets what to call when reading, paused by a full queue, may go on.
    func whenRoom(_ callback: @escaping @Sendable () -> Void) {
        state.withLock { $0.room = callback }
    }

    /// Queues one read's lines, or hands them to a waiting client.
    ///
    /// - Returns: false when the queue is now full: stop reading until ``whenRoom(_:)``'s
    ///   callback. Lines offered after the end are dropped.
    func offer(_ lines: [ArraySlice<UInt8>]) -> Bool {
        let (taker, hasRoom) = state.withLock { state -> (CheckedContinuation<[ArraySlice<UInt8>]?, any Error>?, Bool) in
            guard state.end == nil else { return (nil, true) }
            if let taker = state.taker {
                state.taker = nil
                return (taker, true)
            }
            state.reads.append(lines)
            if state.count >= ReplyInbox.capacity { state.paused = true }
            return (nil, !state.paused)
        }
        taker?.resume(returning: lines)
        return hasRoom
    }

    /// The next read's lines, waiting for them; nil at the end of the connection.
    ///
    /// - Throws: what the connection failed with.
    func next() async throws -> [ArraySlice<UInt8>]? {
        enum Next {
            case lines([ArraySlice<UInt8>], room: (@Sendable () -> Void)?)
            case ended(Result<Void, any Error>)
            case wait
        }
        func take(_ state: inout State) -> Next {
            if state.count > 0 {
                let (lines, room) = state.pop()
                return .lines(lines, room: room)
            }
            if let end = state.end { return .ended(end) }
            return .wait
        }
        switch state.withLock({ take(&$0) }) {
        case .lines(let lines, let room):
            room?()
            return lines
        case .ended(let end):
            try end.get()
            return nil
        case .wait:
            return try await withCheckedThrowingContinuation { continuation in
                let now = state.withLock { state -> Next in
                    let next = take(&state)
                    if case .wait = next { state.taker = continuation }
                    return next
                }
                switch now {
                case .lines(let lines, let room):
                    room?()
                    continuation.resume(returning: lines)
                case .ended(let end): continuation.resume(with: end.map { nil })
                case .wait: break
                }
            }
        }
    }

    /// Ends the lines: the client takes what is queued, then nil.
    func finish() { end(.success(())) }

    /// Ends the lines with `error`: the client takes what is queued, then the error.
    func fail(_ error: any Error) { end(.failure(error)) }

    private func end(_ result: Result<Void, any Error>) {
        let taker = state.withLock { state in
            if state.end == nil { state.end = result }
            state.room = nil
            defer { state.taker = nil }
            return state.taker
        }
        taker?.resume(with: result.map { nil })
    }
}
