import AccountdProtocol

extension AccountdClient {
    /// A full check of one account file: integrity, foreign keys, schema, edited migrations.
    ///
    /// - Throws: ``AccountdClientError``.
    public func verify(account: String) async throws -> VerifyResult {
        try await call(.verify, [("account", .string(account))], as: VerifyResult.self)
    }

    /// The snapshots kept of an account.
    ///
    /// - Throws: ``AccountdClientError``.
    public func snapshots(account: String) async throws -> SnapshotList {
        try await call(.snapshots, [("account", .string(account))], as: SnapshotList.self)
    }

    /// Takes a snapshot of an account now; `label` ends its name (`manual` when nil).
    ///
    /// - Throws: ``AccountdClientError``.
    public func snapshot(account: String, label: String? = nil) async throws -> SnapshotEntry {
        var parameters: [(String, JSONValue)] = [("account", .string(account))]
        if let label { parameters.append(("label", .string(label))) }
        return try await call(.snapshot, parameters, as: SnapshotEntry.self)
    }

    /// Replaces an account's file with one of its snapshots (the newest when nil), after
    /// taking a snapshot of the current file.
    ///
    /// - Throws: ``AccountdClientError``, e.g. `SnapshotNotFound`.
    public func restore(account: String, snapshot: String? = nil) async throws -> RestoreReply {
        var parameters: [(String, JSONValue)] = [("account", .string(account))]
        if let snapshot { parameters.append(("snapshot", .string(snapshot))) }
        return try await call(.restore, parameters, as: RestoreReply.self)
    }

    /// Removes an account's file, keeping a final snapshot; with `purge`, erases the file,
    /// its snapshots and its other files for good.
    ///
    /// - Throws: ``AccountdClientError``, e.g. `AccountActive` for the active account.
    public func remove(account: String, purge: Bool = false) async throws -> RemoveReply {
        var parameters: [(String, JSONValue)] = [("account", .string(account))]
        if purge { parameters.append(("purge", .bool(true))) }
        return try await call(.remove, parameters, as: RemoveReply.self)
    }

    /// Exports an account: rows (`jsonl`) or chunks (`sql`, `sqlite`), then the totals.
    ///
    /// ```swift
    /// for try await event in await client.export(account: "alice", format: "sql") {
    ///     if case .chunk(.sql(let text)) = event { print(text, terminator: "") }
    /// }
    /// ```
    ///
    /// The `sqlite` chunks are the file's bytes; check them against the totals' `sizeBytes`
    /// and `sha256`.
    public func export(account: String, format: String = "jsonl") -> ReplyStream<ExportEvent> {
        let request = Request(
            method: .export, parameters: Parameters([("account", .string(account)), ("format", .string(format))]), more: true)
        return ReplyStream(client: self, request: request, parse: ExportLines.parse)
    }
}
