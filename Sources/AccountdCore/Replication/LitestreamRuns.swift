import Synchronization

/// The `litestream` children a daemon has running, so that shutdown stops them at once
/// (``stopAll()``) instead of waiting for a store that does not answer.
///
/// Each run of ``LitestreamProgram`` with this registry enrols while it runs; ``stopAll()``
/// ends every enrolled run (the child is killed, the run throws) and every later one before
/// it starts. The lock guards only the table of runs, never a child or a file.
public final class LitestreamRuns: Sendable {
    private struct State {
        var stopping = false
        var next = 0
        var stops: [Int: AsyncStream<Void>.Continuation] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether ``stopAll()`` was called.
    public var stopping: Bool { state.withLock { $0.stopping } }

    /// Enrols a run: returns its number and a stream that ends when the run must stop (at
    /// once when ``stopAll()`` was called already). ``leave(_:)`` takes it out.
    func enrol() -> (Int, AsyncStream<Void>) {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        let number: Int? = state.withLock { state in
            guard !state.stopping else { return nil }
            state.next += 1
            state.stops[state.next] = continuation
            return state.next
        }
        guard let number else {
            continuation.finish()
            return (0, stream)
        }
        return (number, stream)
    }

    /// Takes run `number` out once it has ended.
    func leave(_ number: Int) {
        _ = state.withLock { $0.stops.removeValue(forKey: number) }
    }

    /// Stops every run in progress (each child is killed and its run throws `storage`,
    /// saying accountd is shutting down) and refuses every later one.
    public func stopAll() {
        let stops = state.withLock { state -> [AsyncStream<Void>.Continuation] in
            state.stopping = true
            defer { state.stops = [:] }
            return Array(state.stops.values)
        }
        for stop in stops { stop.finish() }
    }
}
