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
    public func pull(account: String) async throws -> PullReply {
        try await call(.pull(account: Self.account(account)), as: PullReply.self)
    }
}
