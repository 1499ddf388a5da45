import AccountdProtocol

extension AccountdClient {
    /// Each account's replication with Litestream: whether it is replicated, and how far
    /// behind the replica is, as Litestream reports it.
    ///
    /// - Throws: ``AccountdClientError``.
    public func replication() async throws -> ReplicationReply {
        try await call(.replication, as: ReplicationReply.self)
    }

    /// Brings an account from the daemon's Litestream replica; refused (`AccountExists`),
    /// touching nothing, when the account has a file here.
    ///
    /// - Throws: ``AccountdClientError``, e.g. `AccountExists`, `AccountNotFound` (nothing in
    ///   the replica), `InvalidRequest` (the daemon runs without replication).
    ///
    /// - Parameter replica: another base URL to pull from (the old host's, for a move); nil for
    ///   the daemon's own replica. A pull ends a handoff of the account from this host.
    /// - Parameter reclaim: take a copy marked as handed off from the daemon's own replica
    ///   all the same (without it: `AccountMoved`).
    public func pull(account: String, replica: String? = nil, reclaim: Bool = false) async throws -> PullReply {
        try await call(.pull(account: Self.account(account), replica: replica, reclaim: reclaim), as: PullReply.self)
    }

    /// Brings the file at `path` (read by the daemon: a `sqlite` or `sql` export, or an
    /// account file copied off a machine) back as the new account `account`; `rebind` takes a
    /// file bound to another name, `overReplica` imports it even when the replica holds the account.
    ///
    /// - Throws: ``AccountdClientError``, e.g. `AccountExists`, `AccountCorrupt` (not a sound
    ///   file of this account), `AccountTooNew`, `AccountMoved`.
    public func importFile(account: String, path: String, rebind: Bool = false, overReplica: Bool = false) async throws -> ImportReply {
        try await call(.importAccount(account: Self.account(account), path: path, rebind: rebind, overReplica: overReplica), as: ImportReply.self)
    }
}
