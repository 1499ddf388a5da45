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
            return try AccountImport(root: root, bundle: bundle).importFile(path, as: account, rebind: rebind, caller: caller) { version, lastCompatible in
                let facts = AccountFacts(version: version, lastCompatibleVersion: lastCompatible, createdAt: nil, applied: [])
                guard isUsable(facts) else { throw tooNew(account, facts) }
            }
        }
    }

    /// The long part of an import, without the account's lock: the file is built and checked
    /// in `tmp/` (``AccountImport/stage(_:as:rebind:caller:)``). An account handed off from
    /// this host is refused first (`accountMoved`: pull it back instead). Then
    /// ``installImport(_:holding:)`` under the account's hold, and ``AccountImport/discard(_:)``
    /// whatever happened. Blocking.
    ///
    /// - Throws: what ``AccountImport/stage(_:as:rebind:caller:)`` throws, `accountMoved`.
    public func stageImport(
        _ path: String, as account: AccountName, rebind: Bool, caller: ImportSource.Caller?, shouldStop: @escaping @Sendable () -> Bool = { false }
    ) throws -> AccountImport.Staged {
        try root.refuseHandedOff(account)
        return try AccountImport(root: root, bundle: bundle).stage(path, as: account, rebind: rebind, caller: caller, shouldStop: shouldStop)
    }

    /// Links a staged import into place under the account's lock
    /// (``AccountImport/install(_:accept:)``), refusing a file at a version this bundle cannot
    /// read (`accountTooNew`) and an account handed off from this host (`accountMoved`). Blocking, and short.
    ///
    /// - Parameter hold: the account's hold, taken before.
    /// - Throws: what ``AccountImport/install(_:accept:)`` throws, `accountTooNew`, `accountMoved`, `accountBusy`.
    public func installImport(_ staged: AccountImport.Staged, holding hold: AccountHold) throws -> AccountImport.Outcome {
        try underLock(staged.account, holding: hold) {
            known.withLock { $0[staged.account] = nil }
            return try AccountImport(root: root, bundle: bundle).install(staged) { version, lastCompatible in
                let facts = AccountFacts(version: version, lastCompatibleVersion: lastCompatible, createdAt: nil, applied: [])
                guard isUsable(facts) else { throw tooNew(staged.account, facts) }
            }
        }
    }
}
