import AccountdCore
import AccountdProtocol

extension Dispatcher {
    /// `Query`: with `more`, `{columns}`, `{rows}` chunks and `{rowCount, truncated}`, a page per
    /// pool job (``DataService/stream(_:_:limit:uid:to:allowed:)``); without, one reply of at
    /// most `limits.queryMaxRows` rows (fewer with `maxRows`), made and encoded on the pool and
    /// bounded by the reply budget (``ReplyBudget``); nil when it was written already. With `migrate: false` (an
    /// admin's), an outdated file is read at its stored version.
    func query(
        _ account: AccountName?, _ statement: SQLStatement, maxRows: Int?, migrate: Bool = true, more: Bool, peer: PeerCredentials,
        writer: ReplyWriter
    ) async throws -> Reply? {
        let data = services.data
        if more {
            try await writer.flush()
            // The grant is asked again before each page: a reload that revokes it ends the stream.
            let allowed: @Sendable () throws -> Void = { [self] in
                if let account { try check(.read(account), for: .query, peer: peer) }
            }
            return Reply(try await data.stream(account, statement, limit: maxRows, migrate: migrate, uid: peer.uid, to: replyStream(writer), allowed: allowed))
        } else {
            // Made and encoded on the pool, counted in the caller's reply budget until the socket has it.
            let limit = min(maxRows ?? data.limits.maxRows, data.limits.maxRows)
            let lease = data.replies.lease(for: peer.uid, account: account)
            let sink = EncodedQuery(rows: WholeQuery(limit: limit, isGone: writer.isClientGone, lease: lease), lease: lease)
            let answer = try await data.query(account, statement, migrate: migrate, uid: peer.uid, sink: sink)
            // A reload that revoked the grant while the statement ran: its rows are not sent.
            if let account { try check(.read(account), for: .query, peer: peer) }
            switch answer {
            case .reply(let reply):
                return Reply(reply)
            case .bytes(let bytes, let lease):
                // Written alone, after the replies before it; the connection reads and answers
                // nothing more until the socket has taken it (its channel is not writable).
                writer.start(bytes).whenComplete { _ in lease.release() }
                return nil
            }
        }
    }

    /// `Execute`: `{results}`, once every statement is durably committed. With `migrate: false`
    /// (an admin's), an outdated file is written at its stored version. The grant is asked
    /// again when its statements are about to run: a reload that revoked it while the Execute
    /// waited its turn refuses it then (hostile31e G1).
    func execute(
        _ account: AccountName?, _ statements: [SQLStatement], migrate: Bool = true, peer: PeerCredentials, writer: ReplyWriter
    ) async throws -> Reply {
        let allowed: @Sendable (AccountName) throws -> Void = { [self] target in
            try check(migrate ? .write(target) : .admin, for: .execute, peer: peer)
        }
        return Reply(
            try await services.data.execute(account, statements, migrate: migrate, uid: peer.uid, gone: writer.isClientGone, allowed: allowed))
    }

    /// How a streamed reply of this request is written: through `writer`, ended when its
    /// client reads nothing for `limits.streamStallSeconds`.
    func replyStream(_ writer: ReplyWriter) -> ReplyStream {
        ReplyStream(writer: writer, stallBound: .milliseconds(Int64(services.data.limits.streamStallSeconds * 1000)))
    }
}
