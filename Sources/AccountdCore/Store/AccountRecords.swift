import AccountdProtocol
import GRDB

/// The daemon's own records inside every account file, in tables named `accountd_*`.
///
/// - `accountd_meta`: the account name the file is bound to, when it was created, its
///   `last_compatible_version`, and the record format.
/// - `accountd_migrations`: one row per applied migration: version, name, sha256 of the
///   file's bytes, when, how long, by which daemon version, and how (`migrated`,
///   `declarative` for a computed plan, whose sha256 is recorded, or `created:<method>`
///   for the versions a new account was built at).
///
/// The file also carries `PRAGMA application_id = 0x61636374` ("acct") and its schema
/// version in `PRAGMA user_version`.
enum AccountRecords {
    /// `PRAGMA application_id` of every account file: the bytes "acct".
    static let applicationID: Int32 = 0x6163_6374
    /// The version of the `accountd_*` tables' layout.
    static let formatVersion = 1

    static let createSQL = """
        CREATE TABLE accountd_meta (
          key TEXT PRIMARY KEY NOT NULL,
          value ANY
        ) WITHOUT ROWID;
        CREATE TABLE accountd_migrations (
          version INTEGER PRIMARY KEY,
          name TEXT NOT NULL,
          sha256 TEXT NOT NULL,
          applied_at TEXT NOT NULL,
          duration_ms REAL NOT NULL,
          daemon_version TEXT NOT NULL,
          method TEXT NOT NULL
        );
        """

    /// Writes the records of a newly built account at `version`.
    static func initialize(
        _ db: Database, account: String, bundle: SchemaBundle, method: String, durationMs: Double
    ) throws {
        try db.execute(sql: createSQL)
        let now = Timestamp.now()
        try db.execute(
            sql: "INSERT INTO accountd_meta(key, value) VALUES ('account', ?), ('created_at', ?), ('format', ?), ('last_compatible_version', ?)",
            arguments: [account, now, formatVersion, bundle.lastCompatibleVersion(upTo: bundle.targetVersion)])
        if let declarative = bundle.declarative {
            try record(
                db, version: declarative.version, name: "schema.sql", sha256: declarative.sha256, appliedAt: now, durationMs: durationMs,
                method: "created:" + method)
        }
        for migration in bundle.migrations {
            try recordMigration(db, migration, appliedAt: now, durationMs: migration.version == bundle.targetVersion ? durationMs : 0, method: "created:" + method)
        }
        try db.execute(sql: "PRAGMA application_id = \(applicationID)")
        try db.execute(sql: "PRAGMA user_version = \(bundle.targetVersion)")
    }

    static func recordMigration(_ db: Database, _ migration: Migration, appliedAt: String, durationMs: Double, method: String) throws {
        try record(
            db, version: migration.version, name: migration.name, sha256: migration.sha256, appliedAt: appliedAt, durationMs: durationMs,
            method: method)
    }

    /// Writes one history row. A declarative bundle writes one row for its version, named `schema.sql`,
    /// whose sha256 is the file's (when the account was created from it) or the applied plan's.
    static func record(
        _ db: Database, version: Int, name: String, sha256: String, appliedAt: String, durationMs: Double, method: String
    ) throws {
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO accountd_migrations(version, name, sha256, applied_at, duration_ms, daemon_version, method)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [version, name, sha256, appliedAt, durationMs, AccountdVersion.current, method])
    }

    static func setLastCompatibleVersion(_ db: Database, _ version: Int) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO accountd_meta(key, value) VALUES ('last_compatible_version', ?)", arguments: [version])
    }

    static func meta(_ db: Database) throws -> [String: DatabaseValue] {
        var out: [String: DatabaseValue] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM accountd_meta") {
            out[row["key"]] = row["value"] as DatabaseValue
        }
        return out
    }

    /// Whether the file's `account` record names `account`.
    ///
    /// `accountd_meta.value` is declared `ANY`, which in a table that is not STRICT has
    /// numeric affinity: a name that reads as a number (`007`, `1e5`, `1.50`) is stored as that
    /// number. The comparison is SQLite's own, under the same affinity, so such a name matches
    /// the number it was stored as.
    static func isBound(_ db: Database, to account: AccountName) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT value = ? FROM accountd_meta WHERE key = 'account'", arguments: [account.rawValue]) ?? false
    }

    static func applied(_ db: Database) throws -> [AppliedMigration] {
        try Row.fetchAll(db, sql: "SELECT * FROM accountd_migrations ORDER BY version").map { row in
            AppliedMigration(
                version: row["version"], name: row["name"], sha256: row["sha256"], appliedAt: row["applied_at"],
                durationMs: row["duration_ms"], daemonVersion: row["daemon_version"], method: row["method"])
        }
    }
}

/// One row of `accountd_migrations`.
public struct AppliedMigration: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var sha256: String
    public var appliedAt: String
    public var durationMs: Double
    public var daemonVersion: String
    /// `migrated`, `declarative`, or `created:<method>` for the versions a new account was built at.
    public var method: String
}

/// The version of accountd, as recorded in `accountd_migrations.daemon_version`.
public enum AccountdVersion {
    public static let current = "0.1.0"
}
