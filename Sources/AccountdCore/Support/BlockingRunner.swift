/// Where the blocking file work of an asynchronous Core operation runs: the daemon's
/// blocking pool (`BlockingPool`). Core's operations that await a child process (Litestream:
/// ``AccountStore/pull(_:with:holding:on:)``, ``AccountStore/restore(_:at:from:reclaim:holding:on:)``,
/// ``DevicePull/pullIfMissing(on:)``) hand their file work to it and await the child between,
/// so that no thread waits for the child and no file work runs on the caller's executor.
public protocol BlockingRunner: Sendable {
    /// Runs `body` where blocking is allowed and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T
}
