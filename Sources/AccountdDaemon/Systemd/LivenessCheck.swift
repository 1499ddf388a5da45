import Dispatch
import NIOCore
import Synchronization

/// Proves that the daemon still serves, without opening a connection to itself.
///
/// A check sends a task to every NIO event loop and runs one cheap store read (see
/// ``SwitchService/livenessRead()``) on a queue of its own, and passes only when all
/// of them have answered within the deadline. Nothing in it takes a connection slot,
/// a blocking-pool thread or an account's lock, so no client, however many
/// connections it holds or however long its requests run, can make a serving daemon
/// fail it; a stuck event loop, a hung disk under the data root, or a deadlock on the
/// daemon's shared state does.
final class LivenessCheck: Sendable {
    private let loops: [any EventLoop]
    private let storeRead: @Sendable () -> Void
    /// The store read runs here, one at a time: never on the blocking pool, which clients can fill.
    private let lane = DispatchQueue(label: "accountd.watchdog.store-read")
    /// When the store read now running started; nil when none is running.
    private let storeReadStarted = Mutex<ContinuousClock.Instant?>(nil)

    /// - Parameters:
    ///   - loops: the event loops that serve connections.
    ///   - storeRead: a cheap read of the store; it must not wait for a client, a migration or a lock held across I/O.
    init(loops: [any EventLoop], storeRead: @escaping @Sendable () -> Void) {
        self.loops = loops
        self.storeRead = storeRead
    }

    /// Runs one check; nil when everything answered within `deadline`, otherwise what did not.
    ///
    /// Returns by the deadline even when something never answers: what is stuck stays stuck,
    /// and the next check reports it again.
    func run(within deadline: Duration) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let pending = Pending(continuation, waitingFor: Set(loops.indices.map(Part.eventLoop) + [.store]))
            for (index, loop) in loops.enumerated() {
                loop.execute { pending.answered(.eventLoop(index)) }
            }
            startStoreRead(pending)
            let nanoseconds = deadline.components.seconds * 1_000_000_000 + deadline.components.attoseconds / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [loops] in
                pending.expire { parts in
                    parts.sorted().map { part in
                        switch part {
                        case .eventLoop(let index): "event loop \(index + 1) of \(loops.count) did not run a task"
                        case .store: "the store read did not return"
                        }
                    }.joined(separator: "; ") + " within \(deadline)"
                }
            }
        }
    }

    /// Starts the store read unless the previous one is still running, in which case this
    /// check waits for that one.
    private func startStoreRead(_ pending: Pending) {
        let running = storeReadStarted.withLock { started -> Bool in
            if started != nil { return true }
            started = .now
            return false
        }
        if running {
            pending.onStoreReadDone(lane)
            return
        }
        lane.async { [self] in
            storeRead()
            storeReadStarted.withLock { $0 = nil }
            pending.answered(.store)
        }
    }
}

extension LivenessCheck {
    /// What a check waits for.
    fileprivate enum Part: Hashable, Comparable {
        case eventLoop(Int)
        case store
    }

    /// One check in flight: what has not answered yet, and the continuation to resume once.
    fileprivate final class Pending: Sendable {
        private struct State {
            var continuation: CheckedContinuation<String?, Never>?
            var waitingFor: Set<Part>
        }
        private let state: Mutex<State>

        init(_ continuation: CheckedContinuation<String?, Never>, waitingFor: Set<Part>) {
            state = Mutex(State(continuation: continuation, waitingFor: waitingFor))
        }

        /// `part` answered; the check passes when it was the last.
        func answered(_ part: Part) {
            let done = state.withLock { state -> CheckedContinuation<String?, Never>? in
                state.waitingFor.remove(part)
                guard state.waitingFor.isEmpty else { return nil }
                defer { state.continuation = nil }
                return state.continuation
            }
            done?.resume(returning: nil)
        }

        /// The deadline passed: the check fails, described by `describe`, unless it passed already.
        func expire(describe: (Set<Part>) -> String) {
            let (continuation, missing) = state.withLock { state in
                defer { state.continuation = nil }
                return (state.continuation, state.waitingFor)
            }
            continuation?.resume(returning: describe(missing))
        }

        /// Counts the store as answered once the read already running on `lane` returns.
        func onStoreReadDone(_ lane: DispatchQueue) {
            lane.async { self.answered(.store) }
        }
    }
}
