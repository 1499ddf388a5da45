import AccountdProtocol
import Synchronization

/// Fans the daemon's events out: to every `Watch` client, and to the in-process
/// listeners (``SystemdStatus``).
///
/// Publishing never blocks. Each watcher has its own ``EventSubscription`` holding up to
/// ``bufferLimit`` events and ``bufferByteLimit`` bytes of them, whatever their values'
/// sizes; a watcher that falls further behind loses the oldest ones, and
/// the next event it gets is `{"event":"missed","count":N}`, saying how many. Listeners
/// are called on the publishing thread and must return at once.
final class EventHub: Sendable {
    /// How many events wait for a watcher that is behind before the oldest are dropped.
    static let bufferLimit = 10_000
    /// How many bytes of events wait for a watcher that is behind before the oldest are
    /// dropped (besides the newest event, which a request's size bounds): 8 MiB.
    static let bufferByteLimit = 8 << 20

    /// A watcher: its queue, and what it is sent of each event (nil: everything).
    private struct Subscriber: Sendable {
        var subscription: EventSubscription
        var filter: (@Sendable (JSONValue) -> JSONValue?)?
    }

    private let subscribers = Mutex<[UInt64: Subscriber]>([:])
    private let listeners = Mutex<[@Sendable (DaemonEvent) -> Void]>([])
    private let lastID = Atomic<UInt64>(0)

    /// A new subscription. It ends when its consumer is cancelled, when ``EventSubscription/finish()``
    /// is called, or with ``finishAll()``; the hub then forgets it.
    ///
    /// - Parameter filter: what the watcher is sent of each event, nil to send nothing of
    ///   it (a watcher that may not read the event's account); applied when the event is
    ///   published, so the watcher's bounds count only what it is sent.
    func subscribe(filter: (@Sendable (JSONValue) -> JSONValue?)? = nil) -> EventSubscription {
        let id = lastID.add(1, ordering: .relaxed).newValue
        let subscription = EventSubscription(limit: Self.bufferLimit, byteLimit: Self.bufferByteLimit) { [weak self] in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = Subscriber(subscription: subscription, filter: filter) }
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
        let bytes = parameters.textSize()
        for subscriber in targets {
            guard let filter = subscriber.filter else {
                subscriber.subscription.publish(parameters, bytes: bytes)
                continue
            }
            guard let shown = filter(parameters) else { continue }
            subscriber.subscription.publish(shown, bytes: shown.textSize())
        }
    }

    func finishAll() {
        let targets = subscribers.withLock { Array($0.values) }
        for subscriber in targets { subscriber.subscription.finish() }
    }
}
