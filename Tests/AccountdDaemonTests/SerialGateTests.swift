import Synchronization
import Testing

@testable import AccountdDaemon

/// The gate a switch's commit passes: one task at a time, in the order they came, none
/// holding a thread while it waits.
@Suite struct SerialGateTests {
    /// What the tasks inside the gate saw.
    final class Record: Sendable {
        let inside = Atomic(0)
        let overlaps = Atomic(0)
        let passed = Atomic(0)
        let order = Mutex<[Int]>([])
    }

    /// 50 tasks that each await a sleep inside the gate never overlap, and all get through.
    @Test func oneTaskAtATimeAndEveryOneGetsThrough() async throws {
        let gate = SerialGate()
        let record = Record()
        try await withThrowingDiscardingTaskGroup { group in
            for _ in 0..<50 {
                group.addTask {
                    try await gate.run {
                        if record.inside.add(1, ordering: .relaxed).newValue > 1 { record.overlaps.add(1, ordering: .relaxed) }
                        try await Task.sleep(for: .microseconds(200))
                        record.inside.subtract(1, ordering: .relaxed)
                        record.passed.add(1, ordering: .relaxed)
                    }
                }
            }
        }
        let (overlaps, passed) = (record.overlaps.load(ordering: .relaxed), record.passed.load(ordering: .relaxed))
        #expect(overlaps == 0)
        #expect(passed == 50)
    }

    /// Waiters get through in the order they came, and a body that throws lets the next one in.
    @Test func waitersGoInTheOrderTheyCameAndAFailureOpensTheGate() async throws {
        let gate = SerialGate()
        let record = Record()
        let holding = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        let first = Task {
            try await gate.run {
                holding.continuation.yield()
                for await _ in release.stream { break }
                throw CancellationError()
            }
        }
        for await _ in holding.stream { break }
        var waiters: [Task<Void, any Error>] = []
        for index in 1...5 {
            waiters.append(Task { try await gate.run { record.order.withLock { $0.append(index) } } })
            // Each one queued before the next starts.
            try await Task.sleep(for: .milliseconds(20))
        }
        release.continuation.yield()
        await #expect(throws: CancellationError.self) { try await first.value }
        for waiter in waiters { try await waiter.value }
        #expect(record.order.withLock { $0 } == [1, 2, 3, 4, 5])
    }

    /// `runIfFree` runs its body at once only when nobody is inside or waiting, and never
    /// overlaps a task inside: while one is, it returns nil and the body does not run.
    @Test func runIfFreeRunsOnlyWhenTheGateIsFree() async throws {
        let gate = SerialGate()
        #expect(gate.runIfFree { 1 } == 1)
        let holding = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        let inside = Task {
            try await gate.run {
                holding.continuation.yield()
                for await _ in release.stream { break }
            }
        }
        for await _ in holding.stream { break }
        let ran = Atomic(false)
        #expect(gate.runIfFree { ran.store(true, ordering: .relaxed) } == nil)
        let bodyRan = ran.load(ordering: .relaxed)
        #expect(!bodyRan)
        release.continuation.yield()
        try await inside.value
        // Left again: free, and a body that throws leaves it free.
        #expect(throws: CancellationError.self) { try gate.runIfFree { throw CancellationError() } }
        #expect(gate.runIfFree { 2 } == 2)
        try await gate.run {}
    }
}
