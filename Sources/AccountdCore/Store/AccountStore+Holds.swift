import AccountdProtocol

extension AccountStore {
    /// Waits for `account` in a task, without holding a thread, and holds it.
    ///
    /// Waiters get the account in the order they asked for it. Pass the hold to the
    /// operations that follow (`holding:`), and release it when done (see ``AccountHold``).
    ///
    /// - Throws: `accountBusy` when the account is not free within ``Options/lockTimeout``;
    ///   `CancellationError` when the task is cancelled while it waits. Either way nothing
    ///   is held.
    public func hold(_ account: AccountName) async throws -> AccountHold {
        try await locks.acquire(account, timeout: options.lockTimeout)
    }

    /// Waits for `account` on this thread, and holds it: for synchronous callers, never in
    /// a task or on an event loop. Waiters are served in the same order as ``hold(_:)``'s.
    ///
    /// - Throws: `accountBusy` when the account is not free within ``Options/lockTimeout``.
    public func holdBlocking(_ account: AccountName) throws -> AccountHold {
        try locks.acquireBlocking(account, timeout: options.lockTimeout)
    }

    /// Runs `body` with `account` held, as ``hold(_:)`` takes it, and releases it after,
    /// whether `body` returns or throws.
    ///
    /// - Throws: as ``hold(_:)``, or what `body` throws.
    public func withHold<T>(
        _ account: AccountName, isolation: isolated (any Actor)? = #isolation, _ body: (AccountHold) async throws -> T
    ) async throws -> T {
        let hold = try await hold(account)
        defer { hold.release() }
        return try await body(hold)
    }

    /// Runs `body` under `hold`, or, without one, under the account's lock taken on this
    /// thread for the duration: what every locked operation of the store does.
    ///
    /// A hold must be this store's (or a store sharing its locks), for `account`, and still
    /// held: anything else is a programmer's mistake.
    ///
    /// Before `body`, an account whose folders under the data root are links is refused
    /// with `accountCorrupt`, nothing changed (``DataRoot/refuseLinkedFolders(_:)``), and an
    /// account handed off from this host with `accountMoved` (``DataRoot/refuseHandedOff(_:)``)
    /// unless `allowingMoved` (what ends a handoff: a pull, a reclaiming restore, a purge).
    /// The record is looked at under the lock, so no operation that waited for the lock
    /// while the handoff held it goes on after it.
    func underLock<T>(_ account: AccountName, holding hold: AccountHold?, allowingMoved: Bool = false, _ body: () throws -> T) throws -> T {
        if let hold {
            precondition(hold.account == account, "a hold of account \(hold.account) was passed for account \(account)")
            precondition(hold.locks === locks, "a hold of account \(account) from a store with other locks was passed")
            precondition(hold.isHeld, "a released hold of account \(account) was passed")
            try root.refuseLinkedFolders(account)
            if !allowingMoved { try root.refuseHandedOff(account) }
            return try body()
        }
        let taken = try holdBlocking(account)
        defer { taken.release() }
        try root.refuseLinkedFolders(account)
        if !allowingMoved { try root.refuseHandedOff(account) }
        return try body()
    }
}
