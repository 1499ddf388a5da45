import Synchronization

/// Stops a running statement from another thread: set when the client that asked for it
/// goes away. The statement's connection checks it from SQLite's progress handler.
public final class SQLStop: Sendable {
    private let stopped = Atomic<Bool>(false)

    public init() {}

    /// Asks the statement to stop; it does within a few thousand virtual machine steps.
    public func stop() { stopped.store(true, ordering: .relaxed) }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopped.load(ordering: .relaxed) }
}

/// A statement stopped because its client went away (``SQLStop``): nothing is replied.
public struct SQLStopped: Error {}
