import AccountdProtocol
import Synchronization

/// One lock per account, so that only one operation runs on an account at a time.
///
/// Waiters queue, and a release hands the account straight to the first of them: first
/// come, first served, so a waiter cannot starve behind later ones that happen to try at
/// the right moment. Each waiter has a deadline, and fails with `accountBusy` when it
/// passes, rather than queueing forever.
///
/// A task waits without holding a thread (``acquire(_:timeout:)``): it is a continuation in
/// the queue, resumed by the release that hands it the account, by a timer at its deadline
/// (a child task of the wait, so it ends with it), or by its cancellation, which takes it
/// out of the queue. So the daemon can have many
/// requests wait for a busy account and still keep its blocking pool for work that is
/// ready. A synchronous caller waits in the same queue on a condition of its own, with
/// the same deadline (``acquireBlocking(_:timeout:)``): only the command-line tools do;
/// the daemon always waits in a task.
final class AccountLocks: Sendable {
    /// Bumped when any hold begins or ends, and by ``changed()``: see ``AccountStore/checksEpoch``.
    private let epochCounter = Atomic<UInt64>(0)

    /// The current epoch of ``AccountStore/checksEpoch``.
    var epoch: UInt64 { epochCounter.load(ordering: .acquiring) }

    /// Makes every check remembered at an earlier epoch stale.
    func changed() { epochCounter.wrappingAdd(1, ordering: .acquiringAndReleasing) }

    /// How a queued waiter is told that the account is now its own.
    private enum Wake {
        /// A task waiting in ``acquire(_:timeout:)``.
        case task(CheckedContinuation<Void, any Error>)
        /// A thread waiting in ``acquireBlocking(_:timeout:)`` until the flag is set.
        case thread(Monitor<Bool>)

        func grant() {
            switch self {
            case .task(let continuation):
                continuation.resume()
            case .thread(let granted):
                granted.withLock { $0 = true }
                granted.broadcast()
            }
        }
    }

    private struct Waiter {
        let id: UInt64
        let wake: Wake
    }

    private struct State {
        /// The held accounts, each with its waiters, first come first.
        var held: [AccountName: [Waiter]] = [:]
        var lastID: UInt64 = 0
        /// How many waiters were ever queued (for tests).
        var queued = 0

        /// Takes the account if it is free.
        mutating func take(_ account: AccountName) -> Bool {
            guard held[account] == nil else { return false }
            held[account] = []
            return true
        }

        /// A new waiter's number.
        mutating func nextID() -> UInt64 {
            lastID += 1
            return lastID
        }

        mutating func enqueue(_ account: AccountName, _ id: UInt64, _ wake: Wake) {
            held[account, default: []].append(Waiter(id: id, wake: wake))
            queued += 1
        }
    }

    private let state = Mutex(State())

    /// Waits in a task for `account`, without holding a thread, for at most `timeout`.
    ///
    /// - Throws: `accountBusy` when the account is not handed over within `timeout`;
    ///   `CancellationError` when the task is cancelled first. Either way the waiter has
    ///   left the queue and holds nothing.
    func acquire(_ account: AccountName, timeout: Duration) async throws -> AccountHold {
        try Task.checkCancellation()
        if state.withLock({ $0.take(account) }) { return AccountHold(account, locks: self) }
        let deadline = ContinuousClock.now + timeout
        let id = state.withLock { $0.nextID() }
        try await withThrowingDiscardingTaskGroup { group in
            // The deadline, a child of this wait: it fires even if nobody ever releases, and
            // goes with the wait, however that ends.
            group.addTask {
                guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                self.abandon(account, id, because: Self.busy(account))
            }
            defer { group.cancelAll() }
            try await queue(for: account, id: id, deadline: deadline)
        }
        return AccountHold(account, locks: self)
    }

    /// Waits in the queue of `account` as waiter `id` until a release hands it the account,
    /// the deadline's child takes it out, or the task is cancelled.
    private func queue(for account: AccountName, id: UInt64, deadline: ContinuousClock.Instant) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let refusal: (any Error)? = state.withLock { state in
                    // Cancelled before it was queued: `onCancel` found nothing to take out.
                    if Task.isCancelled { return CancellationError() }
                    // The timer fired before it was queued, likewise.
                    if ContinuousClock.now >= deadline { return Self.busy(account) }
                    if state.take(account) {
                        continuation.resume()
                        return nil
                    }
                    state.enqueue(account, id, .task(continuation))
                    return nil
                }
                if let refusal { continuation.resume(throwing: refusal) }
            }
        } onCancel: {
            self.abandon(account, id, because: CancellationError())
        }
    }

    /// Waits on this thread for `account`, for at most `timeout`. Never call it from a task
    /// or an event loop: it blocks the thread.
    ///
    /// - Throws: `accountBusy` when the account is not handed over within `timeout`.
    func acquireBlocking(_ account: AccountName, timeout: Duration) throws -> AccountHold {
        let deadline = ContinuousClock.now + timeout
        let queued = state.withLock { state -> (id: UInt64, granted: Monitor<Bool>)? in
            if state.take(account) { return nil }
            let granted = Monitor(false)
            let id = state.nextID()
            state.enqueue(account, id, .thread(granted))
            return (id, granted)
        }
        if let queued, !queued.granted.wait(until: deadline, for: { $0 }) {
            guard !abandon(account, queued.id, because: Self.busy(account)) else { throw Self.busy(account) }
            // Handed over just as the deadline passed: the flag is being set.
            queued.granted.wait { $0 }
        }
        return AccountHold(account, locks: self)
    }

    /// Hands `account` to its first waiter, or frees it when none waits.
    func release(_ account: AccountName) {
        let next = state.withLock { state -> Waiter? in
            guard let waiters = state.held[account] else { preconditionFailure("account \(account) was released but not held") }
            guard !waiters.isEmpty else {
                state.held[account] = nil
                return nil
            }
            return state.held[account]!.removeFirst()
        }
        next?.wake.grant()
    }

    /// Takes the waiter `id` out of the queue of `account`, and resumes a task waiter with
    /// `error`; a thread waiter leaves by itself.
    ///
    /// - Returns: false when the waiter is not queued: it has the account already, or has left.
    @discardableResult
    private func abandon(_ account: AccountName, _ id: UInt64, because error: any Error) -> Bool {
        let removed = state.withLock { state -> Waiter? in
            guard let index = state.held[account]?.firstIndex(where: { $0.id == id }) else { return nil }
            return state.held[account]!.remove(at: index)
        }
        guard let removed else { return false }
        if case .task(let continuation) = removed.wake { continuation.resume(throwing: error) }
        return true
    }

    /// How many waiters were ever queued, for any account: it only grows, so a test can
    /// tell that a waiter has queued even if it has left since (for tests).
    var queuedSoFar: Int {
        state.withLock { $0.queued }
    }

    /// How many wait for `account` (for tests).
    func waiting(for account: AccountName) -> Int {
        state.withLock { $0.held[account]?.count ?? 0 }
    }

    /// Whether `account` is held (for tests).
    func isHeld(_ account: AccountName) -> Bool {
        state.withLock { $0.held[account] != nil }
    }

    /// The refusal of a waiter whose deadline passed.
    static func busy(_ account: AccountName) -> AccountdError {
        AccountdError(.accountBusy, "account \(account) is busy with another operation; try again later", account: account.rawValue)
    }
}
