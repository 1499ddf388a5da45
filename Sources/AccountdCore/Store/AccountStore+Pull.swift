import AccountdProtocol

extension AccountStore {
    /// Pulls `account` from a Litestream replica (``ReplicaPull``) under the account's lock,
    /// refusing a copy at a version this bundle cannot read (`accountTooNew`), touching nothing.
    /// An account handed off from this host may be pulled back; the pull ends the handoff.
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Throws: what ``ReplicaPull/pull(_:accept:)`` throws, `accountTooNew`, `accountBusy`.
    public func pull(_ account: AccountName, with puller: ReplicaPull, holding hold: AccountHold? = nil) throws -> ReplicaPull.Outcome {
        try underLock(account, holding: hold, allowingMoved: true) {
            known.withLock { $0[account] = nil }
            return try puller.pull(account) { version, lastCompatible in
                let facts = AccountFacts(version: version, lastCompatibleVersion: lastCompatible, createdAt: nil, applied: [])
                guard isUsable(facts) else { throw tooNew(account, facts) }
            }
        }
    }
}

extension AccountStore {
    /// Writes the record that `account` is handed off from this host (``DataRoot/recordHandoff(_:replica:at:)``),
    /// under the account's lock, after checking that it has a file here.
    ///
    /// A handoff that a crash interrupted (the record written, the file still here) may be run
    /// again: the record is written afresh and the handoff goes on.
    ///
    /// - Returns: whether the account was recorded as handed off already (an interrupted handoff).
    /// - Throws: `accountMoved` when it was handed off and its file is gone, `accountNotFound`,
    ///   `accountCorrupt` (a link), `accountBusy`, `storage`.
    @discardableResult
    public func recordHandoff(_ account: AccountName, replica: String, holding hold: AccountHold? = nil) throws -> Bool {
        try underLock(account, holding: hold, allowingMoved: true) {
            let path = root.accountPath(account)
            let already = root.isHandedOff(account)
            guard case .regularFile = FileSystem.entry(at: path) else {
                if already { try root.refuseHandedOff(account) }
                throw AccountdError(
                    .accountNotFound, "account \(account) has no file here to hand off", account: account.rawValue, file: path)
            }
            try root.recordHandoff(account, replica: replica)
            return already
        }
    }
}
