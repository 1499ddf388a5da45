import NIOPosix

/// Threads for blocking work (SQLite, fsync), so that neither the event loops nor
/// Swift's cooperative pool ever wait on disk.
final class BlockingPool: Sendable {
    private let pool: NIOThreadPool

    init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    /// Runs `body` on a pool thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }

    func shutdown() async throws {
        try await pool.shutdownGracefully()
    }
}
