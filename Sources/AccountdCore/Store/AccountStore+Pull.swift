import AccountdProtocol

extension AccountStore {
    /// A pull's first step (``ReplicaPull/stage(_:)``) under the account's lock: blocking,
    /// files only. Then ``ReplicaPull/restore(_:)``, then ``finishPull(_:after:with:holding:)``
    /// or ``ReplicaPull/discard(_:)``, all under the same hold.
    ///
    /// - Parameter hold: the account's hold, taken before.
    /// - Throws: what ``ReplicaPull/stage(_:)`` throws.
    public func stagePull(_ account: AccountName, with puller: ReplicaPull, holding hold: AccountHold) throws -> ReplicaPull.Staged {
        try underLock(account, holding: hold) {
            known.withLock { $0[account] = nil }
            return try puller.stage(account)
        }
    }

    /// A pull's last step (``ReplicaPull/finish(_:after:accept:)``) under the account's lock,
    /// refusing a copy at a version this bundle cannot read (`accountTooNew`), touching nothing.
    ///
    /// - Throws: what ``ReplicaPull/finish(_:after:accept:)`` throws, `accountTooNew`.
    public func finishPull(
        _ staged: ReplicaPull.Staged, after run: LitestreamProgram.Run, with puller: ReplicaPull, holding hold: AccountHold
    ) throws -> ReplicaPull.Outcome {
        try underLock(staged.account, holding: hold) {
            known.withLock { $0[staged.account] = nil }
            return try puller.finish(staged, after: run) { version, lastCompatible in
                let facts = AccountFacts(version: version, lastCompatibleVersion: lastCompatible, createdAt: nil, applied: [])
                guard isUsable(facts) else { throw tooNew(staged.account, facts) }
            }
        }
    }
}
