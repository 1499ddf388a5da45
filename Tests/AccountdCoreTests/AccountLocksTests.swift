import AccountdProtocol
import AccountdTestSupport
import Foundation
import Synchronization
import Testing

@testable import AccountdCore

/// The per-account lock: waiters are served first come, first served, give up at their
/// deadline, leave the queue when cancelled, and wait in a task without holding a thread.
@Suite struct AccountLocksTests {
    static let alice = try! AccountName("alice")

    /// A store over a fresh data root; the lock needs no account file. Its waiters wait
    /// for an hour: long enough that a test slowed down by others never sees one give up.
    static func store(_ dir: borrowing TestDirectory, timeout: Duration = .seconds(3600)) throws -> AccountStore {
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: ["CREATE TABLE t (a);"])
        var options = AccountStore.Options()
        options.lockTimeout = timeout
        return AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle), options: options)
    }

    /// The same data root and locks, with another timeout.
    static func impatient(_ store: AccountStore, timeout: Duration) -> AccountStore {
        var options = store.options
        options.lockTimeout = timeout
        return store.replacing(bundle: store.bundle, options: options)
    }

    /// Waits until `count` waiters have queued since the test began, whether they are still
    /// waiting or not (each waiter is started only once the one before it has queued,
    /// which fixes their order).
    static func waitUntilQueued(_ count: Int, _ store: AccountStore) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while store.locks.queuedSoFar < count {
            try #require(ContinuousClock.now < deadline, "\(count) waiters were never queued")
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Runs `body` on a thread of its own (a synchronous caller), in a task that ends with it.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> Task<T, Never> {
        Task {
            await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: body()) }.start()
            }
        }
    }

    /// What the waiters did, shared between tasks and threads.
    final class Log<Value: Sendable>: Sendable {
        private let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
        func update(_ change: (inout Value) -> Void) { value.withLock { change(&$0) } }
        var current: Value { value.withLock { $0 } }
    }

    static func isBusy(_ error: any Error) -> Bool {
        guard let error = error as? AccountdError else { return false }
        return error.kind == .accountBusy && error.message == "account alice is busy with another operation; try again later"
    }

    @Test func waitersInTasksAndOnThreadsGetTheAccountInTheOrderTheyCame() async throws {
        let dir = TestDirectory()
        let store = try Self.store(dir)
        let order = Log<[Int]>([])
        let holder = try await store.hold(Self.alice)
        var waiters: [Task<Void, Never>] = []
        for index in 0..<8 {
            if index.isMultiple(of: 2) {
                waiters.append(
                    Task {
                        try? await store.withHold(Self.alice) { _ in order.update { $0.append(index) } }
                    })
            } else {
                // Without a hold, a store operation waits on its own thread.
                waiters.append(Self.onThread { _ = try? store.withAccount(Self.alice) { order.update { $0.append(index) } } })
            }
            try await Self.waitUntilQueued(index + 1, store)
        }
        holder.release()
        for waiter in waiters { await waiter.value }
        #expect(order.current == Array(0..<8))
        #expect(!store.locks.isHeld(Self.alice))
    }

    @Test func aWaiterGivesUpAtItsDeadlineWhileTheHolderKeepsTheAccountAndTheNextIsServed() async throws {
        let dir = TestDirectory()
        let store = try Self.store(dir)
        let impatient = Self.impatient(store, timeout: .milliseconds(200))
        let holder = try await store.hold(Self.alice)
        let inTask = Task { try await impatient.hold(Self.alice) }
        try await Self.waitUntilQueued(1, store)
        let onThread = Self.onThread { Result { try impatient.holdBlocking(Self.alice) } }
        try await Self.waitUntilQueued(2, store)
        let patient = Task { try await store.withHold(Self.alice) { hold in hold.account } }
        try await Self.waitUntilQueued(3, store)

        // Both impatient waiters fail by their deadline, though nobody released.
        await #expect(performing: { try await inTask.value }, throws: Self.isBusy)
        let fromThread = await onThread.value
        #expect(performing: { try fromThread.get() }, throws: Self.isBusy)
        #expect(holder.isHeld)
        #expect(store.locks.waiting(for: Self.alice) == 1)

        holder.release()
        #expect(try await patient.value == Self.alice)
        #expect(!store.locks.isHeld(Self.alice))
    }

    @Test func aCancelledWaiterLeavesTheQueueAndNeverGetsTheAccount() async throws {
        let dir = TestDirectory()
        let store = try Self.store(dir)
        let holder = try await store.hold(Self.alice)
        let cancelled = Task { try await store.hold(Self.alice) }
        try await Self.waitUntilQueued(1, store)
        let served = Log(false)
        let next = Task { try await store.withHold(Self.alice) { _ in served.update { $0 = true } } }
        try await Self.waitUntilQueued(2, store)

        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(store.locks.waiting(for: Self.alice) == 1)
        #expect(holder.isHeld)

        holder.release()
        try await next.value
        #expect(served.current)
        #expect(!store.locks.isHeld(Self.alice))

        // A task cancelled before it asks is refused without queueing.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await store.hold(Self.alice)
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(!store.locks.isHeld(Self.alice))
    }

    /// 200 tasks wait for the account at once, far more than the threads of Swift's
    /// cooperative pool: if a waiting task held its thread, the later ones could not even
    /// start to queue.
    @Test func waitingTasksHoldNoThread() async throws {
        let dir = TestDirectory()
        let store = try Self.store(dir)
        let order = Log<[Int]>([])
        let holder = try await store.hold(Self.alice)
        var waiters: [Task<Void, any Error>] = []
        for index in 0..<200 {
            waiters.append(Task { try await store.withHold(Self.alice) { _ in order.update { $0.append(index) } } })
            try await Self.waitUntilQueued(index + 1, store)
        }
        holder.release()
        for waiter in waiters { try await waiter.value }
        #expect(order.current == Array(0..<200))
    }

    /// The store's operations run under a hold taken before, by this store or one that
    /// replaced it, while anything without the hold waits.
    @Test func operationsRunUnderAHoldTakenBefore() async throws {
        let dir = TestDirectory()
        let store = try Self.store(dir)
        let impatient = Self.impatient(store, timeout: .milliseconds(100))
        let hold = try await store.hold(Self.alice)
        #expect(try impatient.open(Self.alice, holding: hold).action == .created)
        let snapshot = try store.takeSnapshot(Self.alice, holding: hold)
        #expect(try impatient.verify(Self.alice, holding: hold).integrity == ["ok"])
        #expect(try store.withAccount(Self.alice, holding: hold) { 1 } == 1)
        #expect(try store.restore(Self.alice, snapshot: snapshot.name, holding: hold).restored.name == snapshot.name)
        #expect(performing: { try impatient.withAccount(Self.alice) {} }, throws: Self.isBusy)
        #expect(try store.remove(Self.alice, purge: true, holding: hold).purged)
        hold.release()
        #expect(try impatient.open(Self.alice).action == .created)
    }
}
