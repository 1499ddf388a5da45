import AccountdProtocol

extension AccountdClient {
    /// Which daemon is on the socket: its version, process, data root and bundle.
    ///
    /// - Throws: ``AccountdClientError``.
    public func info() async throws -> InfoReply {
        try await call(.info, as: InfoReply.self)
    }

    /// Checks that the daemon answers.
    ///
    /// - Throws: ``AccountdClientError``.
    public func ping() async throws {
        _ = try await call(.ping, as: EmptyReply.self)
    }

    /// The daemon's metrics, in Prometheus text format: what a Prometheus server scrapes
    /// and what node_exporter's textfile collector reads, as it is.
    ///
    /// - Throws: ``AccountdClientError``.
    public func metrics() async throws -> String {
        try await call(Command.metrics, as: MetricsReply.self).text
    }

    /// The active account, the daemon's state and the versions.
    ///
    /// - Throws: ``AccountdClientError``.
    public func status() async throws -> DaemonStatus {
        try await call(.status(account: nil), as: DaemonStatus.self)
    }

    /// One account's file, version and state.
    ///
    /// - Throws: ``AccountdClientError``, e.g. `InvalidAccountName`.
    public func status(account: String) async throws -> AccountStatusReply {
        try await call(.status(account: Self.account(account)), as: AccountStatusReply.self)
    }

    /// Every account with its size, and with `details` its version and state.
    ///
    /// - Throws: ``AccountdClientError``.
    public func list(details: Bool = false) async throws -> AccountList {
        var entries: [ListEntry] = []
        var summary: ListSummary?
        let stream = ReplyStream<Either<ListEntry, ListSummary>>(
            client: self, command: .success(.list(details: details)),
            element: { parameters throws(ReplyDecodingError) in .first(try ListEntry(parameters: parameters)) },
            last: { parameters throws(ReplyDecodingError) in .second(try ListSummary(parameters: parameters)) })
        for try await item in stream {
            switch item {
            case .first(let entry): entries.append(entry)
            case .second(let last): summary = last
            }
        }
        return AccountList(entries: entries, summary: summary ?? ListSummary(count: entries.count))
    }

    /// Makes `account` the active account, creating or migrating its file as needed.
    ///
    /// The result's `path` is the account file's absolute path, for an app that runs as
    /// the daemon's own user and opens the file itself (docs/APPS.md): open it only after
    /// this returns, and again after a `migration` event from ``watch()``.
    ///
    /// ```swift
    /// let result = try await client.switchAccount("alice")
    /// if result.action == "migrated" { print("migrated from", result.fromVersion ?? 0) }
    /// ```
    ///
    /// - Parameter create: false to fail with `AccountNotFound` instead of creating it.
    /// - Throws: ``AccountdClientError``, e.g. `AccountTooNew` or `MigrationFailed` from the daemon.
    public func switchAccount(_ account: String, create: Bool = true) async throws -> SwitchResult {
        try await call(.switchAccount(account: Self.account(account), create: create), as: SwitchResult.self)
    }

    /// Like ``switchAccount(_:create:)``, with each migration step as it begins.
    ///
    /// ```swift
    /// for try await event in await client.switching(to: "alice") {
    ///     switch event {
    ///     case .progress(let step): print("step \(step.step)/\(step.of): \(step.name)")
    ///     case .finished(let result): print("now at version \(result.version)")
    ///     }
    /// }
    /// ```
    public func switching(to account: String, create: Bool = true) -> ReplyStream<SwitchEvent> {
        ReplyStream(
            client: self, command: Result { () throws(AccountdClientError) in .switchAccount(account: try Self.account(account), create: create) },
            element: { parameters throws(ReplyDecodingError) in .progress(try SwitchProgress(parameters: parameters)) },
            last: { parameters throws(ReplyDecodingError) in .finished(try SwitchResult(parameters: parameters)) })
    }

    /// Migrates accounts to the bundle's version without switching to them: one result
    /// per account as each finishes, then the summary.
    ///
    /// A failed account never stops the others, unless `rollout` says so: with a
    /// `canary` of N, the first N accounts go first and the rest only if all of them
    /// succeeded; with `maxFailures` F, nothing more begins once F accounts have failed.
    /// The accounts not begun are `skipped`, and the summary says why in `stopped`.
    public func migrate(_ selection: MigrateSelection, rollout: MigrateRollout = MigrateRollout()) -> ReplyStream<MigrateEvent> {
        ReplyStream(
            client: self, command: Result { () throws(AccountdClientError) in .migrate(try selection.target(), rollout: rollout) },
            element: { parameters throws(ReplyDecodingError) in .account(try MigrateResult(parameters: parameters)) }, last: { parameters throws(ReplyDecodingError) in .summary(try MigrateSummary(parameters: parameters)) })
    }
}

/// One of two element types, for a stream whose last reply differs from the others.
enum Either<First: Sendable, Second: Sendable>: Sendable {
    case first(First)
    case second(Second)
}
