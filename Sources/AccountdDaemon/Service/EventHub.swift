import AccountdProtocol
import Foundation
import Synchronization

/// Fans events out to every `Watch` client.
///
/// Publishing never blocks: each watcher has a buffer of ``bufferLimit`` events, and a
/// watcher that falls further behind loses the oldest ones (its next event says how
/// many with `missed`).
final class EventHub: Sendable {
    static let bufferLimit = 10_000

    private struct Subscriber {
        var continuation: AsyncStream<JSONValue>.Continuation
    }

    private let subscribers = Mutex<[UUID: Subscriber]>([:])

    /// A new subscription; it ends when the returned stream's consumer is cancelled.
    func subscribe() -> AsyncStream<JSONValue> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<JSONValue>.makeStream(bufferingPolicy: .bufferingNewest(Self.bufferLimit))
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = Subscriber(continuation: continuation) }
        return stream
    }

    /// Sends `event` to every watcher. Safe to call from any thread.
    func publish(_ event: JSONValue) {
        let targets = subscribers.withLock { Array($0.values) }
        for subscriber in targets { subscriber.continuation.yield(event) }
    }

    var watcherCount: Int { subscribers.withLock { $0.count } }

    func finishAll() {
        let targets = subscribers.withLock { Array($0.values) }
        for subscriber in targets { subscriber.continuation.finish() }
    }
}
