import NIOCore
import NIOPosix
import Synchronization

/// Proves that the daemon still serves, without opening a connection to itself.
///
/// A check sends a task to every NIO event loop and runs one cheap store read (see
/// ``SwitchService/livenessRead()``) on a thread of its own, and passes only when all
/// of them have answered within the deadline. Nothing in it takes a connection slot,
/// a blocking-pool thread or an account's lock, so no client, however many
/// connections it holds or however long its requests run, can make a serving daemon
/// fail it; a stuck event loop, a hung disk under the data root, or a deadlock on the
/// daemon's shared state does.
final class LivenessCheck: Sendable {
    private let loops: [any EventLoop]
    private let storeRead: @Sendable () -> Void
    /// The store read runs here, one at a time: a thread of its own, never the blocking
    /// pool's, which clients can fill.
    private let lane = NIOThreadPool(numberOfThreads: 1)
    /// When the store read now running started; nil when none is running.
    private let storeReadStarted = Mutex<ContinuousClock.Instant?>(nil)

    /// - Parameters:
    ///   - loops: the event loops that serve connections.
    ///   - storeRead: a cheap read of the store; it must not wait for a client, a migration or a lock held across I/O.
    init(loops: [any EventLoop], storeRead: @escaping @Sendable () -> Void) {
        self.loops = loops
        self.storeRead = storeRead
        lane.start()
    }

    /// Lets the lane's thread end once its read returns; never waits for it (a hung disk may
    /// never return).
    func stop() {
        lane.shutdownGracefully { _ in }
    }

    /// Runs one check; nil when everything answered within `deadline`, otherwise what did not.
    ///
    /// Returns by the deadline even when something never answers: what is stuck stays stuck,
    /// and the next check reports it again.
    func run(within deadline: Duration) async -> String? {
        let pending = Pending(waitingFor: Set(loops.indices.map(Part.eventLoop) + [.store]))
        for (index, loop) in loops.enumerated() {
            loop.execute { pending.answered(.eventLoop(index)) }
        }
        startStoreRead(pending)
        let count = loops.count
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(for: deadline)
                pending.expire { parts in
                    parts.sorted().map { part in
                        switch part {
                        case .eventLoop(let index): "event loop \(index + 1) of \(count) did not run a task"
                        case .store: "the store read did not return"
                        }
                    }.joined(separator: "; ") + " within \(deadline)"
                }
            }
            let outcome = await pending.outcome()
            group.cancelAll()
            return outcome
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
        lane.submit { [self] _ in
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

    /// One check in flight: what has not answered yet, and how it ended once it has.
    fileprivate final class Pending: Sendable {
        private struct State {
            var waitingFor: Set<Part>
            /// Nil while undecided; then nil inside for a pass, or what failed.
            var outcome: String??
            var continuation: CheckedContinuation<String?, Never>?
        }
        private let state: Mutex<State>

        init(waitingFor: Set<Part>) {
            state = Mutex(State(waitingFor: waitingFor))
        }

        /// How the check ended: nil when everything answered, else what did not.
        func outcome() async -> String? {
            await withCheckedContinuation { continuation in
                let decided = state.withLock { state -> String?? in
                    if state.outcome == nil { state.continuation = continuation }
                    return state.outcome
                }
                if let decided { continuation.resume(returning: decided) }
            }
        }

        /// `part` answered; the check passes when it was the last.
        func answered(_ part: Part) {
            decide { state in
                state.waitingFor.remove(part)
                return state.waitingFor.isEmpty ? .some(nil) : nil
            }
        }

        /// The deadline passed: the check fails, described by `describe`, unless it passed already.
        func expire(describe: @escaping (Set<Part>) -> String) {
            decide { state in .some(describe(state.waitingFor)) }
        }

        /// Sets the outcome once, the first time `rule` gives one, and resumes a waiting check.
        private func decide(_ rule: (inout State) -> String??) {
            let resume = state.withLock { state -> (CheckedContinuation<String?, Never>, String?)? in
                guard state.outcome == nil, let outcome = rule(&state) else { return nil }
                state.outcome = outcome
                defer { state.continuation = nil }
                return state.continuation.map { ($0, outcome) }
            }
            if let (continuation, outcome) = resume { continuation.resume(returning: outcome) }
        }

        /// Counts the store as answered once the read already running on `lane` returns.
        func onStoreReadDone(_ lane: NIOThreadPool) {
            lane.submit { _ in self.answered(.store) }
        }
    }
}
