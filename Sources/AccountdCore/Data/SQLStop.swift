import Synchronization

/// Stops a running statement from another thread: set when the client that asked for it
/// goes away. The statement's connection checks it from SQLite's progress handler, every
/// ``SQLConnection/progressSteps`` virtual machine steps.
public final class SQLStop: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let gone: @Sendable () -> Bool

    /// - Parameter gone: asked at each check whether the client went away (a channel's
    ///   `isActive`, read atomically); it must be cheap and never block.
    public init(gone: @escaping @Sendable () -> Bool = { false }) {
        self.gone = gone
    }

    /// Asks the statement to stop; it does within a few thousand virtual machine steps.
    public func stop() { stopped.store(true, ordering: .relaxed) }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopped.load(ordering: .relaxed) || gone() }
}

/// A statement stopped because its client went away (``SQLStop``): nothing is replied.
public struct SQLStopped: Error {
    public init() {}
}

/// A statement run where it may not wait (``SQLConnection/queryAtOnce(_:)``) needed more
/// steps than its bound, or a lock it could not have at once: nothing was replied, and the
/// statement is run again where it may wait.
public struct SQLOverBudget: Error {
    public init() {}
}
