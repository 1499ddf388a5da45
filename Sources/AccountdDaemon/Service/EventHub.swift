import AccountdProtocol
import Synchronization

/// Fans events out to every `Watch` client.
///
/// Publishing never blocks: each watcher has its own ``EventSubscription`` holding up to
/// ``bufferLimit`` events. A watcher that falls further behind loses the oldest ones, and
/// the next event it gets is `{"event":"missed","count":N}`, saying how many.
final class EventHub: Sendable {
    /// How many events wait for a watcher that is behind before the oldest are dropped.
    static let bufferLimit = 10_000

    private let subscribers = Mutex<[UInt64: EventSubscription]>([:])
    private let lastID = Atomic<UInt64>(0)

    /// A new subscription. It ends when its consumer is cancelled, when ``EventSubscription/finish()``
    /// is called, or with ``finishAll()``; the hub then forgets it.
    func subscribe() -> EventSubscription {
        let id = lastID.add(1, ordering: .relaxed).newValue
        let subscription = EventSubscription(limit: Self.bufferLimit) { [weak self] in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = subscription }
        return subscription
    }

    /// Sends `event` to every watcher. Safe to call from any thread.
    func publish(_ event: JSONValue) {
        let targets = subscribers.withLock { Array($0.values) }
        for subscriber in targets { subscriber.publish(event) }
    }

    func finishAll() {
        let targets = subscribers.withLock { Array($0.values) }
        for subscriber in targets { subscriber.finish() }
    }
}
