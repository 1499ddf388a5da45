@testable import AccountdDaemon
import Synchronization
import Testing

/// ``UidShares``: one uid's jobs beyond its share wait their turn, first come first served,
/// while another uid's run at once; root is not capped.
@Suite struct UidSharesTests {
    /// A gate a job waits at until the test opens it.
    final class Gate: Sendable {
        private let opened: AsyncStream<Void>
        private let open: AsyncStream<Void>.Continuation
        init() { (opened, open) = AsyncStream.makeStream(of: Void.self) }
        func wait() async { for await _ in opened { return } }
        func release() { open.yield() }
    }

    /// What ran, in order.
    final class Order: Sendable {
        private let names = Mutex<[String]>([])
        func add(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    @Test func aUidsJobsBeyondItsShareWaitInOrderAndOthersDoNot() async throws {
        let shares = UidShares(perUid: 1)
        let order = Order()
        let first = Gate()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await shares.run(1000) { order.add("a1"); await first.wait() } }
            while shares.load(of: 1000).running == 0 { await Task.yield() }
            group.addTask { try await shares.run(1000) { order.add("a2") } }
            while shares.load(of: 1000).waiting == 0 { await Task.yield() }
            group.addTask { try await shares.run(1000) { order.add("a3") } }
            while shares.load(of: 1000).waiting < 2 { await Task.yield() }
            // Another uid, and root, run while uid 1000 waits.
            try await shares.run(2000) { order.add("b") }
            try await shares.run(0) { order.add("root") }
            #expect(order.all == ["a1", "b", "root"])
            first.release()
            try await group.waitForAll()
        }
        #expect(order.all == ["a1", "b", "root", "a2", "a3"])
        #expect(shares.load(of: 1000).running == 0 && shares.load(of: 1000).waiting == 0)
    }

    /// hostile31d F2: two uids at their share take all but the reserve; the reserve goes to
    /// uids with nothing running, one each; once every thread runs, everyone waits, and a
    /// thread coming free goes to the first waiter that may take it.
    @Test func theLastThreadsGoOnlyToUidsWithNothingRunning() async throws {
        let shares = UidShares(perUid: 3, threads: 6)
        #expect(shares.reserve == 2)
        let order = Order()
        let gates = (0..<6).map { _ in Gate() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            // uid 1000 at its share (3), uid 2000 one (4 of 6 run: only the reserve is left).
            for index in 0..<3 {
                group.addTask { try await shares.run(1000) { order.add("a\(index)"); await gates[index].wait() } }
            }
            while shares.load(of: 1000).running < 3 { await Task.yield() }
            group.addTask { try await shares.run(2000) { order.add("b0"); await gates[3].wait() } }
            while shares.load(of: 2000).running < 1 { await Task.yield() }
            // uid 2000's second job may not take the reserve: it is running one.
            group.addTask { try await shares.run(2000) { order.add("b1") } }
            while shares.load(of: 2000).waiting < 1 { await Task.yield() }
            // uid 3000 and uid 4000, running nothing, take the reserve at once.
            group.addTask { try await shares.run(3000) { order.add("c0"); await gates[4].wait() } }
            while shares.load(of: 3000).running < 1 { await Task.yield() }
            group.addTask { try await shares.run(4000) { order.add("d0"); await gates[5].wait() } }
            while shares.load(of: 4000).running < 1 { await Task.yield() }
            // Every thread runs: uid 5000 waits too.
            group.addTask { try await shares.run(5000) { order.add("e0") } }
            while shares.load(of: 5000).waiting < 1 { await Task.yield() }
            #expect(order.all == ["a0", "a1", "a2", "b0", "c0", "d0"])
            // One of the reserve comes free: uid 5000 (nothing running) may take it; uid 2000 may not.
            gates[5].release()
            while shares.load(of: 5000).waiting > 0 { await Task.yield() }
            #expect(shares.load(of: 2000).waiting == 1)
            // As the others end, fewer than 4 run, and uid 2000's second job starts.
            for index in 0..<5 { gates[index].release() }
            try await group.waitForAll()
        }
        #expect(Array(order.all.prefix(7)) == ["a0", "a1", "a2", "b0", "c0", "d0", "e0"])
        #expect(order.all.contains("b1") && order.all.count == 8)
        for uid: UInt32 in [1000, 2000, 3000, 4000, 5000] {
            #expect(shares.load(of: uid).running == 0 && shares.load(of: uid).waiting == 0)
        }
    }
}
