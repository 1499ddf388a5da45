import AccountdProtocol
import NIOCore
import Synchronization

/// One watcher's queue of events: bounded, and honest about what it drops.
///
/// Publishing never waits for the watcher. While the watcher is behind (its client is not
/// reading, so its replies cannot be written), events wait here, at most ``limit`` of them;
/// past that the oldest is dropped and counted. The next event the watcher takes is then
/// `{"event":"missed","count":N}`, before the newest events that were kept, so a client
/// always knows how many it did not see (the events it got plus the ones it missed are
/// all that were published since it subscribed).
///
/// The consumer waits for events on a continuation, woken by the next publish: nothing
/// polls or sleeps.
final class EventSubscription: Sendable {
    /// The most events kept for a watcher that is behind.
    let limit: Int

    private struct State {
        var events = CircularBuffer<JSONValue>()
        /// Events dropped since the watcher last took one.
        var missed = 0
        /// The consumer, while it waits for an event.
        var waiting: CheckedContinuation<JSONValue?, Never>?
        var finished = false
    }

    private let state = Mutex(State())
    /// Called once, when the subscription finishes: takes it off the hub.
    private let onFinish: @Sendable () -> Void

    init(limit: Int, onFinish: @escaping @Sendable () -> Void) {
        precondition(limit > 0, "a watcher's buffer holds at least one event")
        self.limit = limit
        self.onFinish = onFinish
    }

    /// The event reporting `count` events dropped.
    static func missed(_ count: Int) -> JSONValue {
        WatchEvent.missed(count: count).parameters
    }

    /// Hands `event` to the watcher, or queues it; never waits.
    func publish(_ event: JSONValue) {
        let waiting = state.withLock { state -> CheckedContinuation<JSONValue?, Never>? in
            guard !state.finished else { return nil }
            if let waiting = state.waiting {
                // A waiting consumer took everything before, and was told of every drop.
                state.waiting = nil
                return waiting
            }
            state.events.append(event)
            if state.events.count > limit {
                state.events.removeFirst()
                state.missed += 1
            }
            return nil
        }
        waiting?.resume(returning: event)
    }

    /// The next event: a `missed` report first if events were dropped, else the oldest kept
    /// one, else the next one published. Nil once the subscription is finished (the daemon
    /// stops, or the consuming task is cancelled).
    func next() async -> JSONValue? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<JSONValue?, Never>) in
                let ready = state.withLock { state -> JSONValue?? in
                    if state.missed > 0 {
                        defer { state.missed = 0 }
                        return .some(Self.missed(state.missed))
                    }
                    if let event = state.events.popFirst() { return .some(event) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiting = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Ends the subscription: a waiting consumer gets nil, later events are ignored, and the
    /// hub forgets it.
    func finish() {
        let (waiting, first) = state.withLock { state in
            defer {
                state.finished = true
                state.waiting = nil
                state.events.removeAll()
            }
            return (state.waiting, !state.finished)
        }
        waiting?.resume(returning: nil)
        if first { onFinish() }
    }
}
