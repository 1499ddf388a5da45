import NIOCore

/// Runs Swift tasks on a NIO event loop.
///
/// A connection's task prefers its channel's event loop, so reading a request,
/// answering it and writing the reply happen on one thread, with no hop to Swift's
/// global pool and back per request. Nothing blocking runs here: SQLite and fsync go
/// to the blocking pool.
final class EventLoopExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: the only stored property is an EventLoop, which is Sendable; the
    // class itself has no mutable state.
    private let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}
