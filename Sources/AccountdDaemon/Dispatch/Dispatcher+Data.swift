import AccountdCore
import AccountdProtocol

extension Dispatcher {
    /// `Query`: with `more`, `{columns}`, `{rows}` chunks and `{rowCount, truncated}`; without,
    /// one reply of at most `limits.queryMaxRows` rows (fewer with `maxRows`). When a reload
    /// takes `peer`'s read access to the account meanwhile, a stream ends with
    /// `PermissionDenied` at its next chunk, and the one reply is `PermissionDenied`.
    func query(
        _ account: AccountName?, _ statement: SQLStatement, maxRows: Int?, more: Bool, peer: PeerCredentials, writer: ReplyWriter
    ) async throws -> Reply {
        let data = services.data
        let access = StreamAccess(.query, account: account, peer: peer, policy: policy, logger: logger)
        if more {
            try await writer.flush()
            let sink = StreamedQuery(limit: maxRows, write: access.guarding(writer.blockingWrite), isGone: writer.isClientGone)
            return Reply(try await access.ending { try await data.query(account, statement, sink: sink) })
        } else {
            let limit = min(maxRows ?? data.limits.maxRows, data.limits.maxRows)
            let sink = WholeQuery(limit: limit, isGone: writer.isClientGone)
            let reply = try await data.query(account, statement, sink: sink)
            try access.check()
            return Reply(reply)
        }
    }

    /// `Execute`: `{results}`, once every statement is durably committed.
    func execute(_ account: AccountName?, _ statements: [SQLStatement], writer: ReplyWriter) async throws -> Reply {
        Reply(try await services.data.execute(account, statements, gone: writer.isClientGone))
    }
}
