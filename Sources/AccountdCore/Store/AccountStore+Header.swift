import AccountdProtocol

extension AccountStore {
    /// The version `account`'s file header says, read without SQLite, no lock and no wait: what
    /// `Status` shows for an account that is being migrated (the migration's transaction is not
    /// committed, so the file is still at the version it is migrating from). Nil for a missing or
    /// unreadable file, or one at version 0.
    public func headerVersion(_ account: AccountName) -> Int? {
        (try? SnapshotStore.version(of: root.accountPath(account))).flatMap { $0 > 0 ? $0 : nil }
    }
}
