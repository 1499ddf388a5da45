import AccountdCore
import AccountdProtocol

/// Removing and purging accounts, in turn with the switches: no account being removed becomes
/// active, and a purged name leaves `state.json` and `failures.json`.
extension SwitchService {
    /// Marks `account` as being removed, unless it is the active account of `caller`, the
    /// uid asking for the removal (SPEC section 11: "the active account gets
    /// `AccountActive`"; section 12: the active account is the caller's).
    ///
    /// Other uids' active account does not stop a removal: an admin may remove, or purge, an
    /// account another person switched to (their grant may be gone; they may not switch
    /// away). Once it is removed, ``releaseRemoved(_:)`` clears it as theirs.
    ///
    /// Together with the check in ``commit(_:version:mode:)``, made under the same
    /// ``commits`` gate, this decides every race between a removal and a switch to the
    /// same account: either the switch committed first and the removal is refused with
    /// `AccountActive` (the caller's switch) or goes on (another uid's, released after the
    /// removal), or the removal marked the account first and the switch fails with
    /// `AccountNotFound`, leaving the previous account active.
    ///
    /// - Throws: `AccountActive` when `account` is the active account of `caller`.
    func beginRemoval(_ account: AccountName, caller: UInt32) async throws {
        try await commits.run { [self] in
            try state.withLock { state in
                if state.active[caller] == account {
                    throw AccountdError(
                        .accountActive,
                        "account \(account) is your active account (uid \(caller)) and cannot be removed; "
                            + "switch to another account first ('accountctl switch OTHER'), then remove it. The file was left untouched",
                        account: account.rawValue, file: root.accountPath(account))
                }
                state.removing.insert(account)
            }
        }
    }

    /// Ends what ``beginRemoval(_:)`` began, whether the removal succeeded or not.
    func endRemoval(_ account: AccountName) {
        _ = state.withLock { $0.removing.remove(account) }
    }

    /// Erases a purged account's name from `failures.json` and `state.json` (its older slot may name it), in
    /// turn with the switches' saves; the write on a pool thread.
    ///
    /// - Throws: `storage`, saying the purge itself is done, when the file cannot be written.
    func forgetPurged(_ account: AccountName) async throws {
        await failedAccounts.succeeded(account, on: pool, logger: logger)
        do {
            try await commits.run { [self] in try await pool.run { try self.record.forget(account) } }
        } catch {
            throw AccountdError(
                .storage,
                "account \(account) was purged, but erasing its name from \(root.statePath) failed: \(error); "
                    + "switch once (any account) to rewrite the file",
                account: account.rawValue, file: root.statePath)
        }
    }
}
