import AccountdCore
import AccountdProtocol

/// A `Query` with `more`, read a page per pool job: `{columns}`, then `{rows}` replies of
/// about ``DataService/chunkBytes`` each, about ``pageBytes`` per page. Between pages it keeps
/// its connection and cursor, so the statement's read transaction (one WAL snapshot) lasts
/// from the first row to the last, and no thread is held while the client reads.
///
/// Used by one pool job at a time (the request's task awaits each page before asking for the
/// next), which is what makes the unchecked `Sendable` sound. ``close()`` gives the
/// connection back, which resets the statement and ends its read transaction.
final class QueryPages: @unchecked Sendable {
    /// About how many bytes of replies one page (one pool job) makes.
    static let pageBytes = 256 * 1024

    private let connection: SQLConnection
    private let cursor: SQLConnection.Cursor
    private let connections: SQLConnectionCache
    private let account: AccountName
    /// The most rows sent; nil for all.
    private let limit: Int?
    private var sentColumns = false
    private var closed = false
    private var broken = false
    /// Rows sent so far.
    private(set) var count = 0
    /// Whether rows were left out past `limit`.
    private(set) var truncated = false

    /// Begins the statement on `connection` (taken from `connections` for `account`); its
    /// pages may step for `timeout` in all. Blocking.
    ///
    /// - Throws: `StatementNotAllowed`, `SQLError`, `InvalidParameter`; the connection is then given back.
    init(
        _ statement: SQLStatement, on connection: SQLConnection, from connections: SQLConnectionCache, account: AccountName, limit: Int?,
        timeout: Duration, stop: SQLStop
    ) throws {
        do {
            cursor = try connection.pagedQuery(statement, timeout: timeout, stop: stop)
        } catch {
            connections.giveBack(connection, account: account, broken: DataService.isFatal(error))
            throw error
        }
        self.connection = connection
        self.connections = connections
        self.account = account
        self.limit = limit
    }

    /// The next page: the `{columns}` reply first, then the rows' replies. Blocking.
    ///
    /// - Throws: `QueryTimeout`, `SQLError`, ``SQLStopped``.
    func next() throws -> ReplyStream.Piece {
        var text = ""
        if !sentColumns {
            text = Reply(QueryReply(columns: cursor.columns), continues: true).encoded()
            sentColumns = true
        }
        let opening = "{\"parameters\":{\"rows\":["
        let closing = "]},\"continues\":true}\n"
        var chunk = opening
        var inChunk = 0
        let ended: Bool
        do {
            ended = try cursor.page { row in
                if let limit, count >= limit {
                    truncated = true
                    return true
                }
                if inChunk > 0 { chunk += "," }
                chunk += "["
                for (index, value) in row.enumerated() {
                    if index > 0 { chunk += "," }
                    value.write(to: &chunk)
                }
                chunk += "]"
                inChunk += 1
                count += 1
                guard chunk.utf8.count >= DataService.chunkBytes else { return false }
                text += chunk + closing
                chunk = opening
                inChunk = 0
                return text.utf8.count >= Self.pageBytes
            }
        } catch let error as ProtocolError {
            broken = DataService.isFatal(error)
            throw error
        }
        if inChunk > 0 { text += chunk + closing }
        return ReplyStream.Piece(bytes: Array(text.utf8), done: ended || truncated)
    }

    /// Gives the connection back: the statement is reset and its read transaction ends. Blocking; once.
    func close() {
        guard !closed else { return }
        closed = true
        connections.giveBack(connection, account: account, broken: broken)
    }
}

extension DataService {
    /// A `Query` with `more`, streamed through `stream` a page per pool job, each within the
    /// caller's share of the pool (``UidShares``); `allowed` is asked before each page, so a
    /// grant revoked by a reload stops a stream already running.
    ///
    /// - Returns: the last reply's `{rowCount, truncated}`.
    /// - Throws: as ``query(_:_:migrate:uid:sink:)``; ``StreamStalled`` when the client read nothing
    ///   for `limits.streamStallSeconds` (the snapshot is released then).
    func stream(
        _ account: AccountName?, _ statement: SQLStatement, limit: Int?, migrate: Bool = true, uid: UInt32, to stream: ReplyStream,
        allowed: @escaping @Sendable () throws -> Void
    ) async throws -> QueryReply {
        let account = try target(account)
        let (connections, timeout) = (connections, Duration.milliseconds(limits.timeoutMs))
        let stop = SQLStop(gone: stream.writer.isClientGone)
        let pages = try await usable(account, locked: false, migrate: migrate, uid: uid) { store in
            let connection = try connections.take(account, path: store.root.accountPath(account), readOnly: true, busy: store.options.lockTimeout)
            return try QueryPages(statement, on: connection, from: connections, account: account, limit: limit, timeout: timeout, stop: stop)
        }
        do {
            try await stream.pump("the Query on account \(account)") {
                try allowed()
                return try await shares.run(uid) { [pool] in
                    try await pool.run {
                        do { return try pages.next() } catch { throw self.wire(error, account: account) }
                    }
                }
            }
        } catch {
            await release(pages)
            await recordDamage(error, account: account)
            throw error
        }
        await release(pages)
        await recordUse(account)
        return QueryReply(rowCount: pages.count, truncated: pages.truncated)
    }

    /// Closes `pages` on a pool thread (or here, once the pool has stopped).
    private func release(_ pages: QueryPages) async {
        do {
            try await pool.run { pages.close() }
        } catch {
            pages.close()
        }
    }
}
