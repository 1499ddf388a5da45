import AccountdProtocol
import Synchronization

/// Fans the daemon's events out: to every `Watch` client, and to the in-process
/// listeners (``SystemdStatus``).
///
/// Publishing never blocks. Each watcher has its own ``EventSubscription`` holding up to
/// ``bufferLimit`` events; a watcher that falls further behind loses the oldest ones, and
/// the next event it gets is `{"event":"missed","count":N}`, saying how many. Listeners
/// are called on the publishing thread and must return at once.
final class EventHub: Sendable {
    /// How many events wait for a watcher that is behind before the oldest are dropped.
    static let bufferLimit = 10_000

    private let subscribers = Mutex<[UInt64: EventSubscription]>([:])
    private let listeners = Mutex<[@Sendable (DaemonEvent) -> Void]>([])
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

    /// Adds an in-process listener for the daemon's life; it must not block.
    func listen(_ listener: @escaping @Sendable (DaemonEvent) -> Void) {
        listeners.withLock { $0.append(listener) }
    }

    /// Sends `event` to every watcher and listener. Safe to call from any thread.
    func publish(_ event: DaemonEvent) {
        for listener in listeners.withLock({ $0 }) { listener(event) }
        guard case .watched(let watched) = event else { return }
        let targets = subscribers.withLock { Array($0.values) }
        guard !targets.isEmpty else { return }
        let parameters = watched.parameters
        for subscriber in targets { subscriber.publish(parameters) }
    }

    func finishAll() {
        let targets = subscribers.withLock { Array($0.values) }
        for subscriber in targets { subscriber.finish() }
    }
}
