import AccountdProtocol
import Synchronization

/// An account held by its caller: while the hold lasts, no other operation of the store
/// (or of a store made from it with ``AccountStore/replacing(bundle:options:)``) runs on it.
///
/// Got from ``AccountStore/hold(_:)``, which waits in a task without holding a thread, or
/// from ``AccountStore/holdBlocking(_:)``; then passed to the store's operations
/// (`holding:`), which run under it instead of taking the lock themselves. That is how
/// the daemon waits for a busy account on a Swift task and uses a blocking-pool thread only
/// once the account is its own:
///
/// ```swift
/// let hold = try await store.hold(account)
/// defer { hold.release() }
/// let outcome = try await pool.run { try store.open(account, holding: hold) }
/// ```
///
/// Release it as soon as the work is done: the first waiter gets the account at once. A
/// hold that goes away unreleased releases itself, so a forgotten release cannot keep an
/// account busy for good.
public final class AccountHold: Sendable {
    /// The account held.
    public let account: AccountName
    let locks: AccountLocks
    private let held = Atomic<Bool>(true)

    init(_ account: AccountName, locks: AccountLocks) {
        self.account = account
        self.locks = locks
        locks.changed()
    }

    deinit { release() }

    /// Whether the hold still lasts: false once released.
    public var isHeld: Bool { held.load(ordering: .acquiring) }

    /// Lets the account go, to its first waiter. Releasing again does nothing.
    public func release() {
        guard held.exchange(false, ordering: .acquiringAndReleasing) else { return }
        locks.changed()
        locks.release(account)
    }
}
