import AccountdProtocol
import Synchronization

/// The connections `Query` and `Execute` keep open between requests, so that a request
/// pays neither an open nor a compile.
///
/// A connection is taken for one request and given back after it. Idle connections are
/// bounded in total (``limit``): the least recently used is closed first, so a fleet of
/// 100,000 accounts never holds 100,000 files open. A connection whose file was replaced
/// since it was opened (a restore, a pull) is closed instead of used, and ``close(_:)``
/// (before a migration, restore or removal) closes an account's idle connections and
/// marks those in use to be closed when they come back.
public final class SQLConnectionCache: Sendable {
    /// Idle connections kept at most, over all accounts.
    public let limit: Int

    private struct Key: Hashable {
        var account: AccountName
        var readOnly: Bool
    }

    private struct State {
        var idle: [Key: [SQLConnection]] = [:]
        var count = 0
        var clock: UInt64 = 0
        var generation: UInt64 = 0
        /// For accounts with connections in use: the generation of their last ``close(_:)``.
        var closedAt: [AccountName: UInt64] = [:]
        var inUse: [AccountName: Int] = [:]
    }

    /// How many accounts' checks are remembered; past it they are all forgotten (and made again).
    static let checkedLimit = 4096

    private let state = Mutex(State())
    /// Accounts whose files the store found usable, under which bundle target, and which file.
    /// Under a lock of its own: every request asks it, and the connections' lock is then taken
    /// twice per request instead of three times (a profile of 50 clients' Queries spent a fifth
    /// of the daemon's CPU spinning for that lock).
    /// `folders`: the ``AccountStore/checksEpoch`` read before the account's handoff record and
    /// folders were last found in order by path (nil: not since the file was checked).
    private let checked = Mutex<[AccountName: (target: Int, identity: FileIdentity, folders: UInt64?)]>([:])

    public init(limit: Int = 64) {
        self.limit = limit
    }

    /// A connection to `account`'s file at `path`: an idle one of the same file, or a new one.
    /// Blocking (a new connection opens the file): call it on a pool thread.
    ///
    /// - Parameter busy: how long its statements wait for another process's lock on the file
    ///   (`accounts.lockTimeoutSeconds`); nil keeps ``SQLConnection``'s default.
    /// - Throws: `SQLError` when the file cannot be opened.
    public func take(_ account: AccountName, path: String, readOnly: Bool, busy: Duration? = nil) throws(ProtocolError) -> SQLConnection {
        let connection = try takeAny(account, path: path, readOnly: readOnly, busy: busy)
        if let busy { connection.waitForLocks(upTo: busy) }
        return connection
    }

    private func takeAny(_ account: AccountName, path: String, readOnly: Bool, busy: Duration?) throws(ProtocolError) -> SQLConnection {
        let key = Key(account: account, readOnly: readOnly)
        let current = FileIdentity(path: path)
        var stale: [SQLConnection] = []
        defer { for connection in stale { connection.close() } }
        let (found, generation) = state.withLock { state -> (SQLConnection?, UInt64) in
            state.inUse[account, default: 0] += 1
            while let connection = state.idle[key]?.popLast() {
                state.count -= 1
                if connection.identity == current { return (connection, state.generation) }
                stale.append(connection)
            }
            return (nil, state.generation)
        }
        if let found { return found }
        do {
            let connection = try SQLConnection(path: path, readOnly: readOnly, busy: busy)
            connection.generation = generation
            return connection
        } catch {
            state.withLock { Self.release(account, in: &$0) }
            throw error
        }
    }

    /// An idle connection to `account`'s file at `path`, or nil when none is idle or the file
    /// is not the one found usable under a bundle at `target` (``isChecked(_:target:path:)``):
    /// never opens a connection and closes none, so a caller that may not wait can ask (one
    /// `lstat` of `path`). Give it back with ``giveBack(_:account:broken:)``.
    public func takeIdle(_ account: AccountName, checkedUnder target: Int, path: String, readOnly: Bool) -> SQLConnection? {
        let key = Key(account: account, readOnly: readOnly)
        guard let current = FileIdentity(path: path),
            checked.withLock({ $0[account].map { $0.target == target && $0.identity == current } ?? false })
        else { return nil }
        return state.withLock { state -> SQLConnection? in
            // A connection to a replaced file is left for `take`, which closes it (closing may wait).
            guard let connection = state.idle[key]?.last, connection.identity == current else { return nil }
            state.idle[key]?.removeLast()
            state.count -= 1
            state.inUse[account, default: 0] += 1
            return connection
        }
    }

    /// Takes back a connection from ``take(_:path:readOnly:)`` or ``takeIdle(_:checkedUnder:path:readOnly:)``; it stays open for the next
    /// request unless its account was closed meanwhile or `broken` (then it is closed).
    ///
    /// Closing a connection may wait (for the file, SQLite's checkpoint on the last close),
    /// so a caller that may not wait (the event loop's bounded read) passes `closer`, which
    /// runs the closes elsewhere (on the blocking pool): this one, or the least recently used
    /// idle ones the cache evicts past its limit. Without it they are closed here.
    public func giveBack(
        _ connection: SQLConnection, account: AccountName, broken: Bool = false,
        closer: (@Sendable (_ close: @escaping @Sendable () -> Void) -> Void)? = nil
    ) {
        connection.finish()
        let key = Key(account: account, readOnly: connection.readOnly)
        var closing: [SQLConnection] = []
        state.withLock { state in
            let closed = state.closedAt[account].map { $0 > connection.generation } ?? false
            Self.release(account, in: &state)
            if broken || closed {
                closing.append(connection)
                return
            }
            state.clock += 1
            connection.lastUsed = state.clock
            state.idle[key, default: []].append(connection)
            state.count += 1
            while state.count > limit, let oldest = Self.leastRecentlyUsed(state.idle) {
                if let connection = state.idle[oldest]?.removeFirst() { closing.append(connection) }
                if state.idle[oldest]?.isEmpty == true { state.idle[oldest] = nil }
                state.count -= 1
            }
        }
        guard !closing.isEmpty else { return }
        let closeAll: @Sendable () -> Void = { [closing] in for connection in closing { connection.close() } }
        if let closer { closer(closeAll) } else { closeAll() }
    }

    /// Whether the store found `account`'s file at `path` usable under a bundle at `target`,
    /// and the file is still the one it checked (no migration, restore or removal since: each
    /// calls ``close(_:)`` first). Then a request needs no new check; two `lstat` calls.
    public func isChecked(_ account: AccountName, target: Int, path: String) -> Bool {
        guard let identity = FileIdentity(path: path) else { return false }
        return checked.withLock { $0[account].map { $0.target == target && $0.identity == identity } ?? false }
    }

    /// Remembers that the store found `account`'s file at `path` usable under a bundle at `target`.
    public func markChecked(_ account: AccountName, target: Int, path: String) {
        guard let identity = FileIdentity(path: path) else { return }
        checked.withLock { checked in
            if checked.count >= Self.checkedLimit { checked.removeAll() }
            checked[account] = (target, identity, nil)
        }
    }

    /// Whether `account`'s handoff record and folders were found in order by path at
    /// `epoch` (``AccountStore/checksEpoch``), the file having been checked before: then an
    /// unlocked read need not look at them again.
    public func foldersChecked(_ account: AccountName, at epoch: UInt64) -> Bool {
        checked.withLock { $0[account]?.folders == epoch }
    }

    /// Remembers that `account`'s handoff record and folders were found in order by path,
    /// `epoch` having been read before they were looked at; kept only while the file's own
    /// check is remembered (``markChecked(_:target:path:)``).
    public func noteFoldersChecked(_ account: AccountName, at epoch: UInt64) {
        checked.withLock { $0[account]?.folders = epoch }
    }

    /// Closes `account`'s idle connections; those in use close when given back. Blocking (a
    /// close may checkpoint): on a pool thread.
    public func close(_ account: AccountName) {
        for connection in release(account) { connection.close() }
    }

    /// Forgets `account`'s file checks and takes its idle connections out of the cache, for
    /// the caller to close (blocking, on a pool thread); those in use close when given back.
    /// Not blocking: a switch learns here whether it has any connection to close before it
    /// sends that work to the pool (most have none).
    public func release(_ account: AccountName) -> [SQLConnection] {
        checked.withLock { $0[account] = nil }
        return state.withLock { state -> [SQLConnection] in
            state.generation += 1
            if state.inUse[account] != nil { state.closedAt[account] = state.generation }
            var closing: [SQLConnection] = []
            for readOnly in [true, false] {
                let connections = state.idle.removeValue(forKey: Key(account: account, readOnly: readOnly)) ?? []
                state.count -= connections.count
                closing += connections
            }
            return closing
        }
    }

    /// Closes every idle connection.
    public func closeAll() {
        checked.withLock { $0.removeAll() }
        let closing = state.withLock { state -> [SQLConnection] in
            defer {
                state.idle.removeAll()
                state.count = 0
            }
            return state.idle.values.flatMap { $0 }
        }
        for connection in closing { connection.close() }
    }

    /// How many connections are idle now.
    public var idleCount: Int { state.withLock { $0.count } }

    private static func release(_ account: AccountName, in state: inout State) {
        let left = (state.inUse[account] ?? 1) - 1
        state.inUse[account] = left > 0 ? left : nil
        if left <= 0 { state.closedAt[account] = nil }
    }

    private static func leastRecentlyUsed(_ idle: [Key: [SQLConnection]]) -> Key? {
        idle.min { ($0.value.first?.lastUsed ?? .max) < ($1.value.first?.lastUsed ?? .max) }?.key
    }
}
