import Synchronization

/// Lets one task at a time through, first come first served; the others wait in a queue
/// without holding a thread.
///
/// For work that must not overlap and awaits I/O while it runs (a switch's commit saves
/// `state.json`): a `Mutex` is never held across I/O, and a task that waits here holds
/// no pool thread.
final class SerialGate: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Runs `body` once every task that came before has left the gate.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    /// Runs `body` at once, on this thread, if no task is in the gate or waiting for it;
    /// returns nil without running it otherwise. (A switch's commit, on the pool thread that
    /// opened its account, saves a second trip to the pool when no other switch commits.)
    func runIfFree<T>(_ body: () throws -> T) rethrows -> T? {
        let entered = state.withLock { state in
            guard state.busy else {
                state.busy = true
                return true
            }
            return false
        }
        guard entered else { return nil }
        defer { leave() }
        return try body()
    }

    private func enter() async {
        let entered = state.withLock { state in
            guard state.busy else {
                state.busy = true
                return true
            }
            return false
        }
        if entered { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Hands the gate to the first waiter, or opens it.
    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
