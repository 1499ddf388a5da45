import AccountdProtocol

extension AccountdClient {
    /// The rows of one read-only statement on an account's own tables, streamed: the daemon
    /// sends them as they are read, and stops reading while this stream is not iterated.
    ///
    /// Parameters are bound, never spliced: an array for `?`, or named values for `:name`.
    ///
    /// ```swift
    /// for try await row in await client.query("SELECT id, title FROM notes WHERE title LIKE ?", [.text("%milk%")]) {
    ///     print(row["id"] ?? .null, row["title"] ?? .null)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - account: the account (default: the active one).
    ///   - maxRows: the most rows sent; nil for all.
    /// - Throws (when iterated): ``AccountdClientError``, e.g. `StatementNotAllowed`, `SQLError`, `QueryTimeout`.
    public func query(_ sql: String, _ parameters: [SQLValue] = [], account: String? = nil, maxRows: Int? = nil) -> ReplyStream<QueryRow> {
        query(SQLStatement(sql: sql, parameters: .positional(parameters)), account: account, maxRows: maxRows)
    }

    /// ``query(_:_:account:maxRows:)`` with any ``SQLStatement``, e.g. with named parameters.
    ///
    /// - Parameter migrate: false (admins only) reads an outdated account at its stored
    ///   version, without migrating it first.
    public func query(_ statement: SQLStatement, account: String? = nil, maxRows: Int? = nil, migrate: Bool = true) -> ReplyStream<QueryRow> {
        let rows = QueryRows()
        return ReplyStream(
            client: self,
            command: Result { () throws(AccountdClientError) in
                .query(account: try account.map(Self.account), statement: statement, maxRows: maxRows, migrate: migrate)
            },
            parse: rows.parse)
    }

    /// Runs statements that write an account's own tables, in one transaction; returns once it
    /// is durably committed, with what each statement did. On any error nothing is kept.
    ///
    /// ```swift
    /// let results = try await client.execute([
    ///     SQLStatement(sql: "INSERT INTO notes(title) VALUES (?)", parameters: .positional([.text("milk")])),
    /// ])
    /// print(results[0].lastInsertRowid)
    /// ```
    ///
    /// - Parameter migrate: false (admins only) writes an outdated account at its stored
    ///   version, without migrating it first: to fix data a migration cannot take.
    /// - Throws: ``AccountdClientError``, e.g. `StatementNotAllowed`, `SQLError`, `PermissionDenied`.
    public func execute(_ statements: [SQLStatement], account: String? = nil, migrate: Bool = true) async throws -> [ExecuteReply.Result] {
        try await call(.execute(account: try account.map(Self.account), statements: statements, migrate: migrate), as: ExecuteReply.self).results
    }

    /// Runs one statement that writes (see ``execute(_:account:)``).
    public func execute(_ sql: String, _ parameters: [SQLValue] = [], account: String? = nil) async throws -> ExecuteReply.Result {
        let results = try await execute([SQLStatement(sql: sql, parameters: .positional(parameters))], account: account)
        return results[0]
    }
}

/// The state of one query stream: the columns, and the rows of the reply being handed out.
///
/// `@unchecked Sendable`: only the stream's one iterator calls ``parse(_:_:)``, one call at a
/// time (``ReplyStream/Iterator/next()`` is not reentrant).
final class QueryRows: @unchecked Sendable {
    private var columns: [String] = []
    private var rows: [[SQLValue]] = []
    private var index = 0

    /// Hands out one row at a time; a reply's line is removed with its last row.
    func parse(_ lines: inout ArraySlice<ArraySlice<UInt8>>, _ client: AccountdClient) throws(AccountdClientError) -> (element: QueryRow?, last: Bool) {
        if index < rows.count {
            let row = QueryRow(columns: columns, values: rows[index])
            index += 1
            if index == rows.count { lines.removeFirst() }
            return (row, false)
        }
        let reply = try client.reply(lines[lines.startIndex])
        let model: QueryReply
        do { model = try QueryReply(parameters: reply.parameters) } catch { throw .unexpectedReply(error) }
        if let columns = model.columns { self.columns = columns }
        rows = model.rows ?? []
        index = 0
        guard reply.continues, !rows.isEmpty else {
            lines.removeFirst()
            return (nil, !reply.continues)
        }
        index = 1
        if rows.count == 1 { lines.removeFirst() }
        return (QueryRow(columns: columns, values: rows[0]), false)
    }
}
