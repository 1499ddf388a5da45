import AccountdProtocol
import NIOCore
import Synchronization

/// One watcher's queue of events: bounded, and honest about what it drops.
///
/// Publishing never waits for the watcher. While the watcher is behind (its client is not
/// reading, so its replies cannot be written), events wait here, at most ``limit`` of them
/// and at most ``byteLimit`` bytes of them (the newest event is always kept, however large:
/// a request's size bounds it); past either bound the oldest are dropped and counted. The
/// next event the watcher takes is then `{"event":"missed","count":N}`, before the newest
/// events that were kept, so a client always knows how many it did not see (the events it
/// got plus the ones it missed are all that were published since it subscribed).
///
/// The consumer waits for events on a continuation, woken by the next publish: nothing
/// polls or sleeps.
final class EventSubscription: Sendable {
    /// The most events kept for a watcher that is behind.
    let limit: Int
    /// The most bytes of events (as their replies' JSON would take) kept for a watcher that
    /// is behind, beyond the newest event.
    let byteLimit: Int

    private struct State {
        var events = CircularBuffer<(event: JSONValue, bytes: Int)>()
        /// The bytes of the events kept.
        var bytes = 0
        /// Events dropped since the watcher last took one.
        var missed = 0
        /// The consumer, while it waits for an event.
        var waiting: CheckedContinuation<JSONValue?, Never>?
        var finished = false
    }

    private let state = Mutex(State())
    /// Called once, when the subscription finishes: takes it off the hub.
    private let onFinish: @Sendable () -> Void

    init(limit: Int, byteLimit: Int, onFinish: @escaping @Sendable () -> Void) {
        precondition(limit > 0, "a watcher's buffer holds at least one event")
        self.limit = limit
        self.byteLimit = byteLimit
        self.onFinish = onFinish
    }

    /// The event reporting `count` events dropped.
    static func missed(_ count: Int) -> JSONValue {
        WatchEvent.missed(count: count).parameters
    }

    /// Hands `event` to the watcher, or queues it; never waits.
    ///
    /// - Parameter bytes: the event's size, as ``JSONValue/textSize(upTo:)`` estimates it.
    func publish(_ event: JSONValue, bytes: Int) {
        let waiting = state.withLock { state -> CheckedContinuation<JSONValue?, Never>? in
            guard !state.finished else { return nil }
            if let waiting = state.waiting {
                // A waiting consumer took everything before, and was told of every drop.
                state.waiting = nil
                return waiting
            }
            state.events.append((event, bytes))
            state.bytes += bytes
            while state.events.count > limit || (state.bytes > byteLimit && state.events.count > 1) {
                state.bytes -= state.events.removeFirst().bytes
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
                    if let first = state.events.popFirst() {
                        state.bytes -= first.bytes
                        return .some(first.event)
                    }
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
                state.bytes = 0
            }
            return (state.waiting, !state.finished)
        }
        waiting?.resume(returning: nil)
        if first { onFinish() }
    }
}
