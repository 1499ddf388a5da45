import AccountdProtocol
import Synchronization

/// The lines read from the daemon, on their way from the task that reads the socket
/// (``ReplyLines``) to the client that takes them, a read's worth at a time.
///
/// A bounded queue: the reader goes on reading while up to ``capacity`` reads wait to be
/// taken, and waits once that many do, so a client that stops taking lines stops the
/// reading, and then the daemon, within a bounded amount of memory. Either side suspends
/// only when it must (the queue empty, or full): a long export flows without a hand-over
/// of threads for every read, as a rendezvous channel would need.
final class ReplyInbox: Sendable {
    /// How many reads may wait to be taken.
    static let capacity = 16

    private struct State {
        var reads: [[ArraySlice<UInt8>]] = []
        var first = 0
        /// The client waiting for lines.
        var taker: CheckedContinuation<[ArraySlice<UInt8>]?, any Error>?
        /// The reader waiting for room.
        var sender: CheckedContinuation<Void, Never>?
        /// Why the lines ended: nil while they go on; `.success` at the end of the connection.
        var end: Result<Void, any Error>?

        var count: Int { reads.count - first }

        mutating func pop() -> [ArraySlice<UInt8>] {
            let read = reads[first]
            first += 1
            if first == reads.count {
                reads.removeAll(keepingCapacity: true)
                first = 0
            }
            return read
        }
    }

    private let state = Mutex(State())

    /// Queues one read's lines; waits while the queue is full. Lines sent after the end are dropped.
    func send(_ lines: [ArraySlice<UInt8>]) async {
        enum Next {
            case handed(CheckedContinuation<[ArraySlice<UInt8>]?, any Error>)
            case queued
            case full
        }
        let next = state.withLock { state -> Next in
            guard state.end == nil else { return .queued }
            if let taker = state.taker {
                state.taker = nil
                return .handed(taker)
            }
            state.reads.append(lines)
            return state.count >= Self.capacity ? .full : .queued
        }
        switch next {
        case .handed(let taker): taker.resume(returning: lines)
        case .queued: break
        case .full:
            await withCheckedContinuation { continuation in
                let room = state.withLock { state -> Bool in
                    guard state.count >= Self.capacity, state.end == nil else { return true }
                    state.sender = continuation
                    return false
                }
                if room { continuation.resume() }
            }
        }
    }

    /// The next read's lines, waiting for them; nil at the end of the connection.
    ///
    /// - Throws: what the reader failed with.
    func next() async throws -> [ArraySlice<UInt8>]? {
        enum Next {
            case lines([ArraySlice<UInt8>], sender: CheckedContinuation<Void, Never>?)
            case ended(Result<Void, any Error>)
            case wait
        }
        let next = state.withLock { state -> Next in
            if state.count > 0 {
                let lines = state.pop()
                let sender = state.sender
                state.sender = nil
                return .lines(lines, sender: sender)
            }
            if let end = state.end { return .ended(end) }
            return .wait
        }
        switch next {
        case .lines(let lines, let sender):
            sender?.resume()
            return lines
        case .ended(let end):
            try end.get()
            return nil
        case .wait:
            return try await withCheckedThrowingContinuation { continuation in
                let now = state.withLock { state -> Next in
                    if state.count > 0 {
                        defer { state.sender = nil }
                        return .lines(state.pop(), sender: state.sender)
                    }
                    if let end = state.end { return .ended(end) }
                    state.taker = continuation
                    return .wait
                }
                switch now {
                case .lines(let lines, let sender):
                    sender?.resume()
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
        let (taker, sender) = state.withLock { state in
            if state.end == nil { state.end = result }
            defer {
                state.taker = nil
                state.sender = nil
            }
            return (state.taker, state.sender)
        }
        taker?.resume(with: result.map { nil })
        sender?.resume()
    }
}
