import AccountdProtocol

extension AccountdClient {
    /// A full check of one account file: integrity, foreign keys, schema, edited migrations.
    ///
    /// - Throws: ``AccountdClientError``.
    public func verify(account: String) async throws -> VerifyResult {
        try await call(.verify(account: Self.account(account)), as: VerifyResult.self)
    }

    /// The SQL that would bring an account to the bundle's version, each lossy step marked.
    /// Changes nothing.
    ///
    /// - Throws: ``AccountdClientError``.
    public func plan(account: String) async throws -> PlanReply {
        try await call(.plan(account: Self.account(account)), as: PlanReply.self)
    }

    /// The snapshots kept of an account.
    ///
    /// - Throws: ``AccountdClientError``.
    public func snapshots(account: String) async throws -> SnapshotList {
        try await call(.snapshots(account: Self.account(account)), as: SnapshotList.self)
    }

    /// Takes a snapshot of an account now; `label` ends its name (`manual` when nil).
    ///
    /// - Throws: ``AccountdClientError``, e.g. `InvalidParameter` for a label that breaks
    ///   ``SnapshotLabel``'s rules.
    public func snapshot(account: String, label: String? = nil) async throws -> SnapshotEntry {
        let account = try Self.account(account)  // checked first, as the daemon does
        let label = try label.map(Self.label) ?? .manual
        return try await call(.snapshot(account: account, label: label), as: SnapshotEntry.self)
    }

    /// Replaces an account's file with one of its snapshots (the newest when nil), after
    /// taking a snapshot of the current file.
    ///
    /// - Throws: ``AccountdClientError``, e.g. `SnapshotNotFound`.
    /// With `reclaim`, an account handed off from this host is restored here all the same,
    /// ending the handoff (without it: `AccountMoved`).
    public func restore(account: String, snapshot: String? = nil, reclaim: Bool = false) async throws -> RestoreReply {
        try await call(.restore(account: Self.account(account), snapshot: snapshot, reclaim: reclaim), as: RestoreReply.self)
    }

    /// `Restore {account, at}`: the account as its Litestream replica had it at `at` (admin
    /// only). The reply's `at` is the time the restored state really has.
    public func restore(account: String, at: ReplicaTime, reclaim: Bool = false) async throws -> RestoreReply {
        try await call(.restore(account: Self.account(account), snapshot: nil, at: at, reclaim: reclaim), as: RestoreReply.self)
    }

    /// Removes an account's file, keeping a final snapshot; with `purge`, erases the file,
    /// its snapshots and its other files for good.
    ///
    /// - Throws: ``AccountdClientError``, e.g. `AccountActive` for the caller's own active account.
    /// With `handoff`, Litestream syncs the account a last time and the daemon then refuses it
    /// (`AccountMoved`) until it is pulled back: the first half of a move to another host.
    public func remove(account: String, purge: Bool = false, handoff: Bool = false) async throws -> RemoveReply {
        try await call(.remove(account: Self.account(account), purge: purge, handoff: handoff), as: RemoveReply.self)
    }

    /// Exports an account: rows (`jsonl`) or chunks (`sql`, `sqlite`), then the totals.
    ///
    /// ```swift
    /// for try await event in await client.export(account: "alice", format: .sql) {
    ///     if case .chunk(.sql(let text)) = event { print(text, terminator: "") }
    /// }
    /// ```
    ///
    /// The `sqlite` chunks are the file's bytes; check them against the totals' `sizeBytes`
    /// and `sha256`.
    public func export(account: String, format: ExportFormat = .jsonl) -> ReplyStream<ExportEvent> {
        ReplyStream(
            client: self, command: Result { () throws(AccountdClientError) in .export(account: try Self.account(account), format: format) },
            parse: ExportLines.parse)
    }
}
