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
}
