import AccountdCore
import Foundation
import NIOCore
import NIOPosix

/// Threads for blocking work (SQLite, fsync), so that neither the event loops nor
/// Swift's cooperative pool ever wait on disk. Core's operations that await Litestream
/// run their file work here (``BlockingRunner``).
final class BlockingPool: BlockingRunner {
    private let pool: NIOThreadPool
    /// How many threads it has.
    let threads: Int

    /// The daemon's pool size: four threads per core, at least eight, so that slow disk work
    /// on a few accounts leaves threads for the rest; plus one for each account a `Migrate`
    /// works on at once, so that a fleet migration never takes the threads that `Switch`,
    /// `Status` and preference commits need.
    static func daemonThreadCount(migrateConcurrency: Int) -> Int {
        max(8, ProcessInfo.processInfo.activeProcessorCount * 4) + migrateConcurrency
    }

    init(threads: Int) {
        self.threads = threads
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    /// Runs `body` on a pool thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }

    /// Hands `work` to a pool thread and returns at once; for work whose caller does not
    /// wait for it (a preference table's commits: see ``PreferenceDatabase/Runner``). Work
    /// handed over while the pool shuts down still runs (on the thread that shuts it down,
    /// or the caller's): a commit is never dropped.
    func submit(_ work: @escaping @Sendable () -> Void) {
        pool.submit { _ in work() }
    }

    /// Calls `work` on an event loop once `delay` has passed; no thread waits meanwhile (a
    /// preference table's gathering of writers: see ``PreferenceDatabase/Schedule``).
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(nanoseconds)) { work() }
    }

    func shutdown() async throws {
        try await pool.shutdownGracefully()
    }
}
