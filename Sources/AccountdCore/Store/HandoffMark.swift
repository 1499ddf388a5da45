import AccountdProtocol
import Foundation
import GRDB

/// The fence of a handoff carried in the account file itself: `remove --handoff` writes,
/// before Litestream's final sync, which replica the account was handed off from
/// (`accountd_meta` key `handed_off_from`), so the replica's newest state says so.
///
/// The record in `moved/` fences the account on this host's disk; this mark fences it where
/// that record cannot: after a machine loss, a rebuilt host whose own replica is the one the
/// account was handed off from would otherwise pull (or, with `onCreate: pull`, switch to)
/// its pre-handoff copy while the new owner serves the account. A pull refuses a copy whose
/// mark names the replica it comes from when that replica is this host's own
/// (``ReplicaPull/finish(_:after:accept:)``); a copy that becomes live here (a pull taken, a
/// restore, an import) has its mark removed, so the replicas of the host serving the account
/// never carry it.
public enum HandoffMark {
    /// The key in `accountd_meta`.
    static let key = "handed_off_from"

    /// What a mark says.
    public struct Mark: Sendable, Equatable {
        /// The replica the account was handed off from (its base URL, password masked).
        public var replica: String
        /// When, RFC 3339.
        public var at: String
    }

    /// Writes the mark into the file at `path` in one transaction.
    static func write(_ path: String, replica: String, at date: Date, busy: Duration) throws {
        var text = ""
        JSONValue.object([("replica", .string(replica)), ("at", .string(Timestamp.string(date)))]).write(to: &text)
        try change(path, busy: busy) { db in
            try db.execute(sql: "INSERT OR REPLACE INTO accountd_meta(key, value) VALUES (?, ?)", arguments: [key, text])
        }
    }

    /// Removes the mark from the file at `path`, if it has one (a write only then).
    static func remove(_ path: String, busy: Duration = Connections.defaultBusyTimeout) throws {
        try change(path, busy: busy) { db in
            guard try read(db) != nil else { return }
            try db.execute(sql: "DELETE FROM accountd_meta WHERE key = ?", arguments: [key])
        }
    }

    /// The mark of the file open in `db`; nil when it has none.
    static func read(_ db: Database) throws -> Mark? {
        guard try db.tableExists("accountd_meta"),
            let text = try String.fetchOne(db, sql: "SELECT CAST(value AS TEXT) FROM accountd_meta WHERE key = ?", arguments: [key]),
            let parsed = try? JSONParser.parse(text), let replica = parsed["replica"]?.stringValue
        else { return nil }
        return Mark(replica: replica, at: parsed["at"]?.stringValue ?? "an unknown time")
    }

    /// Whether two replica URLs name one replica, for the handoff's fence: the same store
    /// however the URL is spelled (``ReplicaAddress/sameStore(_:_:)``), and for `file://` the
    /// same folder however it is reached (links resolved, where the folders exist). Another
    /// name of one store that only the network knows (a proxy on another port, a DNS alias)
    /// counts as another store.
    public static func sameReplica(_ one: String, _ other: String) -> Bool {
        if ReplicaAddress.sameStore(one, other) { return true }
        guard let first = resolvedFolder(one), let second = resolvedFolder(other) else { return false }
        return first == second
    }

    /// A `file://` URL's folder with its links resolved; nil for other schemes or a folder
    /// that cannot be resolved.
    private static func resolvedFolder(_ url: String) -> String? {
        guard url.lowercased().hasPrefix("file://") else { return nil }
        var path = String(url.dropFirst("file://".count))
        if let query = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<query]) }
        path = path.removingPercentEncoding ?? path
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The mark of the file at `path`, read without writing; nil when it has none.
    ///
    /// - Throws: when the file cannot be read.
    static func read(path: String) throws -> Mark? {
        let queue = try DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: false, readonly: true, label: "handoff-mark"))
        defer { try? queue.close() }
        return try queue.read { try read($0) }
    }

    /// At start: a handoff record (`moved/`) beside an account file that carries no mark is a
    /// pull that ended the handoff and was interrupted by a crash after it linked the file
    /// into place (a handoff writes the mark before its record): the record is erased, so the
    /// host serves the account it holds. Returns the accounts so finished.
    public static func finishInterruptedPulls(_ root: DataRoot) throws -> [AccountName] {
        guard let moved = try root.folder.subfolder("moved") else { return [] }
        var finished: [AccountName] = []
        for name in moved.names() {
            // Only a file read and found without a mark: one that cannot be read keeps its fence.
            guard let account = try? AccountName(name), case .regularFile = FileSystem.entry(at: root.accountPath(account)),
                case .some(.none) = try? read(path: root.accountPath(account))
            else { continue }
            try root.eraseHandoff(account)
            finished.append(account)
        }
        return finished
    }

    private static func change(_ path: String, busy: Duration, _ body: @escaping (Database) throws -> Void) throws {
        let queue = try DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: false, label: "handoff-mark", busy: busy))
        defer { try? queue.close() }
        try queue.write(body)
    }
}
