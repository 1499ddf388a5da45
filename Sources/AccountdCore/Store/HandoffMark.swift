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

    private static func change(_ path: String, busy: Duration, _ body: @escaping (Database) throws -> Void) throws {
        let queue = try DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: false, label: "handoff-mark", busy: busy))
        defer { try? queue.close() }
        try queue.write(body)
    }
}
