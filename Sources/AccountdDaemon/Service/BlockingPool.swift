import Foundation
import NIOPosix

/// Threads for blocking work (SQLite, fsync), so that neither the event loops nor
/// Swift's cooperative pool ever wait on disk.
final class BlockingPool: Sendable {
    private let pool: NIOThreadPool

    /// The daemon's pool size: four threads per core, at least eight, so that slow disk work
    /// on a few accounts leaves threads for the rest; plus one for each account a `Migrate`
    /// works on at once, so that a fleet migration never takes the threads that `Switch`,
    /// `Status` and preference commits need.
    static func daemonThreadCount(migrateConcurrency: Int) -> Int {
        max(8, ProcessInfo.processInfo.activeProcessorCount * 4) + migrateConcurrency
    }

    init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    /// Runs `body` on a pool thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }

    /// Hands `work` to a pool thread and returns at once; for work whose caller does not
    /// wait for it (a preference table's commits: see ``PreferenceDatabase/Runner``). Work
    /// handed over while the pool shuts down is dropped.
    func submit(_ work: @escaping @Sendable () -> Void) {
        pool.submit { state in
            if state == .active { work() }
        }
    }

    func shutdown() async throws {
        try await pool.shutdownGracefully()
    }
}
