import AccountdCore
import AccountdProtocol

extension Dispatcher {
    /// `Query`: with `more`, `{columns}`, `{rows}` chunks and `{rowCount, truncated}`; without,
    /// one reply of at most `limits.queryMaxRows` rows (fewer with `maxRows`).
    func query(_ account: AccountName?, _ statement: SQLStatement, maxRows: Int?, more: Bool, writer: ReplyWriter) async throws -> Reply {
        let data = services.data
        if more {
            try await writer.flush()
            let sink = StreamedQuery(limit: maxRows, write: writer.blockingWrite, isGone: writer.isClientGone)
            return Reply(try await data.query(account, statement, sink: sink))
        } else {
            let limit = min(maxRows ?? data.limits.maxRows, data.limits.maxRows)
            let sink = WholeQuery(limit: limit, isGone: writer.isClientGone)
            return Reply(try await data.query(account, statement, sink: sink))
        }
    }

    /// `Execute`: `{results}`, once every statement is durably committed.
    func execute(_ account: AccountName?, _ statements: [SQLStatement], writer: ReplyWriter) async throws -> Reply {
        Reply(try await services.data.execute(account, statements, gone: writer.isClientGone))
    }
}
