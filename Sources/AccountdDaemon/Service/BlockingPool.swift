import Foundation
import NIOPosix

/// Threads for blocking work (SQLite, fsync), so that neither the event loops nor
/// Swift's cooperative pool ever wait on disk.
final class BlockingPool: Sendable {
    private let pool: NIOThreadPool

    /// The daemon's pool size: four threads per core, at least eight, so that slow disk work
    /// on a few accounts leaves threads for the rest.
    static var daemonThreadCount: Int { max(8, ProcessInfo.processInfo.activeProcessorCount * 4) }

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
