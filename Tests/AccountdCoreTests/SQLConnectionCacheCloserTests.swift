@testable import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Synchronization
import Testing

/// Giving a connection back on an event loop closes nothing there (issue 32): the closes of a
/// broken connection, and of the least recently used one evicted past the cache's limit, go
/// to the `closer` (the daemon's blocking pool), and happen only when it runs them.
@Suite struct SQLConnectionCacheCloserTests {
    /// How many of this process's descriptors are open on `path`.
    static func descriptors(on path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path }.count
    }

    @Test func closesGoToTheCloserNotTheCaller() throws {
        let dir = TestDirectory()
        let path = dir.sub("a.sqlite")
        try DatabaseQueue(path: path).write { try $0.execute(sql: "CREATE TABLE t(x)") }
        let cache = SQLConnectionCache(limit: 1)
        let jobs = Mutex<[@Sendable () -> Void]>([])
        let closer: @Sendable (@escaping @Sendable () -> Void) -> Void = { job in jobs.withLock { $0.append(job) } }
        let (one, two, three) = (try AccountName("one"), try AccountName("two"), try AccountName("three"))

        cache.giveBack(try cache.take(one, path: path, readOnly: true), account: one, closer: closer)
        #expect(jobs.withLock { $0.count } == 0, "an idle connection is kept, not closed")
        // Over the limit of 1: the least recently used idle connection is evicted, through the closer.
        cache.giveBack(try cache.take(two, path: path, readOnly: true), account: two, closer: closer)
        #expect(jobs.withLock { $0.count } == 1)
        // A broken one is closed through the closer too.
        cache.giveBack(try cache.take(three, path: path, readOnly: true), account: three, broken: true, closer: closer)
        #expect(jobs.withLock { $0.count } == 2)
        #expect(cache.idleCount == 1)
        // Nothing was closed by the caller: three connections still hold the file ...
        #expect(Self.descriptors(on: path) == 3)
        // ... until the closer runs its jobs; the idle one stays.
        for job in jobs.withLock({ $0 }) { job() }
        #expect(Self.descriptors(on: path) == 1)
        cache.closeAll()
        #expect(Self.descriptors(on: path) == 0)
    }
}
