import AccountdCore
import AccountdProtocol

extension Dispatcher {
    /// `Query`: with `more`, `{columns}`, `{rows}` chunks and `{rowCount, truncated}`; without,
    /// one reply of at most `limits.queryMaxRows` rows (fewer with `maxRows`).
    /// With `migrate: false` (an admin's), an outdated file is read at its stored version.
    func query(
        _ account: AccountName?, _ statement: SQLStatement, maxRows: Int?, migrate: Bool = true, more: Bool, writer: ReplyWriter
    ) async throws -> Reply {
        let data = services.data
        if more {
            try await writer.flush()
            let sink = StreamedQuery(limit: maxRows, write: writer.blockingWrite, isGone: writer.isClientGone)
            return Reply(try await data.query(account, statement, migrate: migrate, sink: sink))
        } else {
            let limit = min(maxRows ?? data.limits.maxRows, data.limits.maxRows)
            let sink = WholeQuery(limit: limit, isGone: writer.isClientGone)
            return Reply(try await data.query(account, statement, migrate: migrate, sink: sink))
        }
    }

    /// `Execute`: `{results}`, once every statement is durably committed. With `migrate: false`
    /// (an admin's), an outdated file is written at its stored version.
    func execute(_ account: AccountName?, _ statements: [SQLStatement], migrate: Bool = true, writer: ReplyWriter) async throws -> Reply {
        Reply(try await services.data.execute(account, statements, migrate: migrate, gone: writer.isClientGone))
    }
}
