import AccountdProtocol

extension AccountStore {
    /// Imports the file at `path` as the new account `account` (``AccountImport``) under the
    /// account's lock, refusing a file at a version this bundle cannot read (`accountTooNew`)
    /// and an account handed off from this host (`accountMoved`: pull it back instead),
    /// touching nothing.
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Throws: what ``AccountImport/importFile(_:as:rebind:caller:accept:)`` throws,
    ///   `accountTooNew`, `accountMoved`, `accountBusy`.
    public func importFile(
        _ path: String, as account: AccountName, rebind: Bool, caller: ImportSource.Caller?, holding hold: AccountHold? = nil
    ) throws -> AccountImport.Outcome {
        try underLock(account, holding: hold) {
            known.withLock { $0[account] = nil }
            return try AccountImport(root: root).importFile(path, as: account, rebind: rebind, caller: caller) { version, lastCompatible in
                let facts = AccountFacts(version: version, lastCompatibleVersion: lastCompatible, createdAt: nil, applied: [])
                guard isUsable(facts) else { throw tooNew(account, facts) }
            }
        }
    }
}
