import AccountdProtocol
import Foundation
import GRDB

/// Brings a file from outside back as a new account (`Import`): the `sqlite` export, the
/// `sql` export, or an account file copied off a machine. The `jsonl` export carries rows
/// without the schema and is refused (``ImportSource``).
///
/// The file is read under ``ImportSource``'s rules, copied (or, for SQL, replayed by
/// ``SQLReplay``) into a staging file in `accounts/` (`.<account>.sqlite.importing`), and
/// the copy is checked like a pulled file: accountd's `application_id` and records, bound
/// to this account (a file bound to another name only with `rebind`, which rewrites the
/// binding in the copy), at a version the caller accepts, whole by `PRAGMA integrity_check`.
/// Litestream's tables, if the file carries them, are dropped: a new account starts with no
/// replication state. The copy is put in WAL mode, synced and linked into place with
/// `link()`, which never replaces a file. On every refusal the staging file goes and the
/// data root is as it was; the source file is only read.
public struct AccountImport: Sendable {
    public var root: DataRoot

    /// What an import brought.
    public struct Outcome: Sendable {
        public var account: AccountName
        /// The schema version of the imported file; the next switch opens or migrates it.
        public var version: Int
        /// The rows of the account's own tables (all but SQLite's, accountd's and Litestream's).
        public var rows: Int64
        public var format: ImportSource.Format
    }

    public init(root: DataRoot) {
        self.root = root
    }

    /// The refusal of an import, naming the account and the source file.
    static func refusal(_ account: AccountName, _ source: String, _ reason: String) -> AccountdError {
        AccountdError(
            .accountCorrupt, "import of account \(account) refused: \(source) \(reason); nothing was changed",
            account: account.rawValue, file: source)
    }

    /// Imports `path` as `account`. Blocking: it copies and scans the file.
    ///
    /// - Parameters:
    ///   - rebind: take a file bound to another account name, binding the copy to `account`.
    ///   - caller: who asked (``ImportSource/Caller``); nil skips the permission check.
    ///   - accept: decides whether the file's version may be used here; it throws (e.g.
    ///     `accountTooNew`) to refuse it.
    /// - Throws: ``AccountdError``: `accountExists` when the account has a file here,
    ///   `accountCorrupt` when the file is not a sound account file of this account (or is a
    ///   `jsonl` export), `storage` when the path breaks a rule of ``ImportSource`` or the disk fails.
    public func importFile(
        _ path: String, as account: AccountName, rebind: Bool, caller: ImportSource.Caller?,
        accept: (_ version: Int, _ lastCompatible: Int) throws -> Void = { _, _ in }
    ) throws -> Outcome {
        let target = root.accountPath(account)
        guard FileSystem.entry(at: target) == .missing else {
            throw AccountdError(
                .accountExists,
                "account \(account) already exists here (\(target)); an import never replaces an account, and nothing was touched. "
                    + "Import under a new name (with --rebind), or remove the account first",
                account: account.rawValue, file: target)
        }
        let source = try ImportSource(path: path, account: account, root: root, caller: caller)
        let temp = root.stagingPath(account, .importing)
        try root.clearStaging(account, .importing)
        defer { try? root.clearStaging(account, .importing) }
        switch source.format {
        case .sqlite: try source.copy(to: temp)
        case .sql:
            // Made 0600 first (exclusively, not through a link): SQLite would create it with its own mode.
            try FileSystem.createExclusive(temp)
            try source.withMappedBytes { try SQLReplay.run($0, into: temp, account: account, source: path) }
        }
        let (version, lastCompatible, rows) = try prepare(temp, account: account, rebind: rebind, source: path)
        try accept(version, lastCompatible)
        for suffix in ["-wal", "-shm", "-journal"] { try FileSystem.removeIfPresent(temp + suffix) }
        guard try FileSystem.linkIntoPlace(temp, at: target) else {
            throw AccountdError(
                .accountExists, "account \(account) was created here while it was being imported; nothing was replaced",
                account: account.rawValue, file: target)
        }
        return Outcome(account: account, version: version, rows: rows, format: source.format)
    }

    /// Checks the staged copy, binds it to `account` if asked, drops Litestream's tables and
    /// puts it in WAL mode.
    private func prepare(_ temp: String, account: AccountName, rebind: Bool, source: String) throws -> (Int, Int, Int64) {
        do {
            let queue = try DatabaseQueue(path: temp, configuration: Connections.configuration(foreignKeys: false, label: "import"))
            defer { try? queue.close() }
            try queue.writeWithoutTransaction { db in
                let problems = try String.fetchAll(db, sql: "PRAGMA integrity_check(5)")
                guard problems == ["ok"] else {
                    throw Self.refusal(account, source, "fails SQLite's integrity check: " + problems.joined(separator: "; "))
                }
                let applicationID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
                guard applicationID == AccountRecords.applicationID, try db.tableExists("accountd_meta"), try db.tableExists("accountd_migrations")
                else {
                    throw Self.refusal(
                        account, source, "is not an accountd account file or export (its application_id or accountd_meta records are missing)")
                }
                let bound = try String.fetchOne(db, sql: "SELECT value FROM accountd_meta WHERE key = 'account'")
                if bound != account.rawValue {
                    guard rebind else {
                        throw Self.refusal(
                            account, source,
                            "belongs to account \(bound.map { AccountName.quoted($0) } ?? "(none)"); import it as that account, or pass rebind (accountctl import --rebind) to make it account \(account)'s")
                    }
                    try db.inTransaction {
                        try db.execute(sql: "INSERT OR REPLACE INTO accountd_meta(key, value) VALUES ('account', ?)", arguments: [account.rawValue])
                        return .commit
                    }
                }
                try db.inTransaction {
                    try LitestreamTables.drop(db)
                    return .commit
                }
                guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")?.lowercased() == "wal" else {
                    throw AccountdError(.storage, "putting the imported copy \(temp) in WAL mode failed", account: account.rawValue, file: temp)
                }
            }
            let facts = try AccountInspector.inspect(path: temp, account: account, deep: false)
            let rows = try queue.read { db in try Self.countRows(db) }
            return (facts.version, facts.lastCompatibleVersion, rows)
        } catch let error as AccountdError {
            throw error
        } catch {
            throw Self.refusal(account, source, "cannot be read as an account file: \(ErrorText.of(error))")
        }
    }

    /// The rows of every stored table of the account's own (not SQLite's, accountd's or Litestream's).
    static func countRows(_ db: Database) throws -> Int64 {
        let tables = try String.fetchAll(
            db,
            sql: """
                SELECT name FROM sqlite_schema
                WHERE type = 'table' AND rootpage > 0 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                  AND name NOT LIKE 'accountd\\_%' ESCAPE '\\' AND \(LitestreamTables.excluded())
                """)
        var total: Int64 = 0
        for table in tables { total += try Int64.fetchOne(db, sql: "SELECT count(*) FROM \(table.quotedIdentifier)") ?? 0 }
        return total
    }
}
