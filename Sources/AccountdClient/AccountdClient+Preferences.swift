import AccountdProtocol

extension AccountdClient {
    /// A preference's value.
    ///
    /// - Parameter account: for an account-scoped namespace, the account (default: the active one).
    /// - Throws: ``AccountdClientError``, e.g. `KeyNotFound` or `NamespaceNotFound`.
    public func get(namespace: String, key: String, account: String? = nil) async throws -> JSONValue {
        try await call(.get(Self.target(namespace, key, account)), as: PreferenceValue.self).value
    }

    /// Sets a preference; returns once it is durably committed.
    ///
    /// - Throws: ``AccountdClientError``.
    public func set(namespace: String, key: String, value: JSONValue, account: String? = nil) async throws {
        _ = try await call(.set(Self.target(namespace, key, account), value: value), as: EmptyReply.self)
    }

    /// Deletes a preference.
    ///
    /// - Throws: ``AccountdClientError``.
    public func delete(namespace: String, key: String, account: String? = nil) async throws {
        _ = try await call(.delete(Self.target(namespace, key, account)), as: EmptyReply.self)
    }

    /// The keys set in a namespace.
    ///
    /// - Throws: ``AccountdClientError``.
    public func keys(namespace: String, account: String? = nil) async throws -> [String] {
        try await call(.keys(namespace: namespace, account: account.map(Self.account)), as: KeysReply.self).keys
    }

    /// The daemon's events as they happen: switches, migration steps, preference changes.
    ///
    /// The stream ends only when the daemon ends the watch (when it stops: then it
    /// throws `ShuttingDown`) or closes the connection; a watching client
    /// takes no other requests, so use a client of its own.
    ///
    /// ```swift
    /// for try await event in await client.watch() {
    ///     if case .switched(let switched) = event { print("now on", switched.account) }
    /// }
    /// ```
    public func watch() -> ReplyStream<WatchEvent> {
        ReplyStream(
            client: self, command: .success(.watch), element: { parameters throws(ReplyDecodingError) in try WatchEvent(parameters: parameters) },
            last: { parameters throws(ReplyDecodingError) in parameters == .object([]) ? nil : try WatchEvent(parameters: parameters) })
    }

    /// The value a `Get`, `Set` or `Delete` is about, with `account` checked.
    private static func target(_ namespace: String, _ key: String, _ account: String?) throws(AccountdClientError) -> PreferenceKey {
        PreferenceKey(namespace: namespace, key: key, account: try account.map(Self.account))
    }
}
