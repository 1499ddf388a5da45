import Foundation
import GRDB

/// How accountd configures its SQLite connections, in one place.
enum Connections {
    /// A bundle's `template.sqlite`, opened as an input that nothing writes: read-only and
    /// `immutable=1` (a URI filename; Debian's SQLite takes URIs everywhere), so SQLite
    /// makes no `-shm` or `-wal` beside it whatever the file's journal mode, and works in a
    /// bundle folder the daemon may not write (the shipped unit's `ProtectSystem=strict`).
    static func template(_ path: String) throws -> DatabaseQueue {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        let encoded = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        var config = configuration(foreignKeys: false, readonly: true, label: "template")
        config.busyMode = .immediateError
        return try DatabaseQueue(path: "file:" + encoded + "?immutable=1", configuration: config)
    }

    /// A connection that runs bundle SQL.
    ///
    /// - Double-quoted string literals are accepted, as in the `sqlite3` shell, because
    ///   bundles are plain SQL written for SQLite (mihon's history relies on them).
    /// - `synchronous = FULL`: in WAL mode, NORMAL may lose the last commits on power loss,
    ///   and accountd acknowledges nothing that a crash could lose.
    /// - `busy`: how long SQLite waits for a lock another process holds before it answers
    ///   `SQLITE_BUSY` (the store's `AccountBusy`). An account file's connections wait the
    ///   store's ``AccountStore/Options/lockTimeout`` (`accounts.lockTimeoutSeconds`); zero
    ///   does not wait at all (what `Status` uses: it never waits).
    static func configuration(foreignKeys: Bool, readonly: Bool = false, label: String, busy: Duration = defaultBusyTimeout) -> Configuration {
        var config = Configuration()
        config.label = label
        config.readonly = readonly
        config.foreignKeysEnabled = foreignKeys
        config.acceptsDoubleQuotedStringLiterals = true
        config.busyMode = busyMode(busy)
        if !readonly {
            config.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
            }
        }
        return config
    }

    /// How long a connection waits for another process's lock when nothing says otherwise.
    static let defaultBusyTimeout: Duration = .seconds(10)

    /// SQLite's busy handling for a wait of `busy`: none for zero (or less).
    static func busyMode(_ busy: Duration) -> Database.BusyMode {
        let seconds = Double(busy.components.seconds) + Double(busy.components.attoseconds) / 1e18
        return seconds > 0 ? .timeout(seconds) : .immediateError
    }

    /// Sets `synchronous = FULL` on a writer that was opened in WAL mode.
    ///
    /// GRDB switches a WAL connection to `synchronous = NORMAL` after `prepareDatabase`
    /// has run, and NORMAL in WAL mode does not sync the WAL at each commit: a power loss
    /// could take back commits that were acknowledged. Every WAL writer calls this once it
    /// is open.
    static func requireFullSync(_ writer: some DatabaseWriter) throws {
        try writer.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            let level = try Int.fetchOne(db, sql: "PRAGMA synchronous")
            guard level == 2 else {
                throw DatabaseError(message: "PRAGMA synchronous is \(level.map(String.init) ?? "unknown"), not FULL (2)")
            }
        }
    }
}
