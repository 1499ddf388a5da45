import Foundation
import GRDB
import Synchronization

/// How accountd configures its SQLite connections, in one place.
public enum Connections {
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
                try db.execute(sql: "PRAGMA journal_size_limit = \(walSizeLimit.load(ordering: .relaxed))")
            }
        }
        return config
    }

    /// The size a write-ahead log is cut back to each time SQLite starts it over after a
    /// checkpoint (`PRAGMA journal_size_limit` on every writable connection), in bytes:
    /// `accounts.walMaxBytes`, default 64 MiB. Without it a WAL keeps the size of the
    /// largest transaction it ever held (a table rebuild of a 100 MB account leaves a
    /// 200 MB WAL) for as long as a connection keeps the file open.
    static let walSizeLimit = Atomic<Int>(defaultWALSizeLimit)
    /// `accounts.walMaxBytes`'s default: 64 MiB.
    public static let defaultWALSizeLimit = 64 << 20

    /// Sets ``walSizeLimit`` for the connections opened from now on (`accounts.walMaxBytes`).
    public static func limitWAL(toBytes bytes: Int) {
        walSizeLimit.store(max(bytes, 0), ordering: .relaxed)
    }

    /// Whether a replicator (Litestream) reads the accounts' WALs: the daemon then leaves
    /// checkpoints to it. A checkpoint that resets the WAL before Litestream has copied its
    /// frames loses them from the replica (a 100,000-row migration was missing from a
    /// pulled copy).
    static let replicated = Atomic<Bool>(false)

    /// Says whether Litestream replicates the accounts (``replicated``), at start and at each reload.
    public static func leaveCheckpointsToReplicator(_ on: Bool) {
        replicated.store(on, ordering: .relaxed)
    }

    /// Checkpoints the WAL into the file and truncates it to nothing, if no reader is in the
    /// way right now: it never waits (a reader elsewhere leaves the WAL as it is, and
    /// ``walSizeLimit`` cuts it back at a later checkpoint). Best effort: a failure changes nothing.
    static func truncateWAL(_ db: Database) {
        guard !replicated.load(ordering: .relaxed) else { return }
        guard let timeout = try? Int.fetchOne(db, sql: "PRAGMA busy_timeout") else { return }
        try? db.execute(sql: "PRAGMA busy_timeout = 0")
        _ = try? Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        try? db.execute(sql: "PRAGMA busy_timeout = \(timeout)")
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
