import AccountdProtocol

extension AccountStore {
    /// Pulls `account` from a Litestream replica (``ReplicaPull``) under the account's lock,
    /// refusing a copy at a version this bundle cannot read (`accountTooNew`), touching nothing.
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Throws: what ``ReplicaPull/pull(_:accept:)`` throws, `accountTooNew`, `accountBusy`.
    public func pull(_ account: AccountName, with puller: ReplicaPull, holding hold: AccountHold? = nil) throws -> ReplicaPull.Outcome {
        try underLock(account, holding: hold) {
            known.withLock { $0[account] = nil }
            return try puller.pull(account) { version, lastCompatible in
                let facts = AccountFacts(version: version, lastCompatibleVersion: lastCompatible, createdAt: nil, applied: [])
                guard isUsable(facts) else { throw tooNew(account, facts) }
            }
        }
    }
}
