import AccountdProtocol
import Foundation
import GRDB

/// Brings a file from outside back as a new account (`Import`): the `sqlite` export, the
/// `sql` export, or an account file copied off a machine. The `jsonl` export carries rows
/// without the schema and is refused (``ImportSource``).
///
/// The file is read under ``ImportSource``'s rules, copied (or, for SQL, replayed by
/// ``SQLReplay``) into a staging file in the data root's `tmp/` without the account's lock, and
/// the copy is checked like a pulled file: accountd's `application_id` and records, bound
/// to this account (a file bound to another name only with `rebind`, which rewrites the
/// binding in the copy), at a version the caller accepts, whole by `PRAGMA integrity_check`,
/// and with exactly the schema the bundle gives a file at its version (the comparison
/// `Verify` makes: a trigger or index the export never writes is refused, named; at an older
/// version of a chain of migrations, what those migrations build).
/// Litestream's tables, if the file carries them, are dropped: a new account starts with no
/// replication state. The copy is put in WAL mode, synced and linked into place with
/// `link()`, which never replaces a file. On every refusal the staging file goes and the
/// data root is as it was; the source file is only read.
public struct AccountImport: Sendable {
    public var root: DataRoot
    /// The bundle whose schema at a file's version the file must have (``AccountStore`` gives
    /// it); nil compares none (the offline tool, `discard`).
    var bundle: SchemaBundle?

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

    /// An import that refuses a file whose schema is not what `bundle` gives a file at its version.
    init(root: DataRoot, bundle: SchemaBundle) {
        self.root = root
        self.bundle = bundle
    }

    /// The refusal of an import, naming the account and the source file.
    static func refusal(_ account: AccountName, _ source: String, _ reason: String) -> AccountdError {
        AccountdError(
            .accountCorrupt, "import of account \(account) refused: \(source) \(reason); nothing was changed",
            account: account.rawValue, file: source)
    }

    /// An import built and checked, not yet in place: ``stage(_:as:rebind:caller:)`` makes it
    /// without the account's lock, ``install(_:accept:)`` links it into place under it, and
    /// ``discard(_:)`` removes it whatever happened.
    public struct Staged: Sendable {
        public var account: AccountName
        /// The built file, in the data root's `tmp/` (`import-<account>-<uuid>.sqlite`).
        public var path: String
        /// The source file, for messages.
        public var source: String
        public var version: Int
        public var lastCompatibleVersion: Int
        public var rows: Int64
        public var format: ImportSource.Format
    }

    /// The prefix of the files imports build in `tmp/`; the daemon clears those a crash left
    /// when it starts (``DataRoot/clearStagedExports()``).
    public static let stagingPrefix = "import-"

    /// Imports `path` as `account`: ``stage(_:as:rebind:caller:)`` then ``install(_:accept:)``.
    /// Blocking: it copies and scans the file.
    ///
    /// - Parameters:
    ///   - rebind: take a file bound to another account name, binding the copy to `account`.
    ///   - caller: who asked (``ImportSource/Caller``); nil skips the permission check.
    ///   - accept: decides whether the file's version may be used here; it throws (e.g.
    ///     `accountTooNew`) to refuse it.
    /// - Throws: what ``stage(_:as:rebind:caller:)`` and ``install(_:accept:)`` throw.
    public func importFile(
        _ path: String, as account: AccountName, rebind: Bool, caller: ImportSource.Caller?,
        accept: (_ version: Int, _ lastCompatible: Int) throws -> Void = { _, _ in }
    ) throws -> Outcome {
        let staged = try stage(path, as: account, rebind: rebind, caller: caller)
        defer { discard(staged) }
        return try install(staged, accept: accept)
    }

    /// Builds the account file from `path` in the data root's `tmp/` and checks it, without
    /// touching `accounts/`: the long part of an import (a copy, or the replay of an `sql`
    /// export in one transaction), which needs no lock of the account. Blocking.
    ///
    /// - Throws: ``AccountdError``: `accountExists` when the account has a file here already
    ///   (checked again by ``install(_:accept:)``), `accountCorrupt` when the file is not a sound
    ///   account file of this account (or is a `jsonl` export), `storage` when the path breaks a
    ///   rule of ``ImportSource`` or the disk fails. Nothing is left in `tmp/` then.
    ///
    /// `shouldStop` (the daemon is stopping, the client went away) ends an `sql` replay at once
    /// with `interrupted`, nothing left in `tmp/`.
    public func stage(
        _ path: String, as account: AccountName, rebind: Bool, caller: ImportSource.Caller?, shouldStop: @escaping @Sendable () -> Bool = { false }
    ) throws -> Staged {
        try refuseExisting(account)
        let source = try ImportSource(path: path, account: account, root: root, caller: caller)
        try FileSystem.ensureDirectory(root.temporaryDirectory)
        let temp = root.temporaryDirectory + "/" + Self.stagingPrefix + account.rawValue + "-" + UUID().uuidString + ".sqlite"
        do {
            switch source.format {
            case .sqlite: try source.copy(to: temp)
            case .sql:
                // Made 0600 first (exclusively, not through a link): SQLite would create it with its own mode.
                try FileSystem.createExclusive(temp)
                try source.withMappedBytes {
                    try SQLReplay.run($0, into: temp, account: account, source: path, quotesContent: ImportSource.isPrivileged(caller), shouldStop: shouldStop)
                }
            }
            let (version, lastCompatible, rows) = try prepare(
                temp, account: account, rebind: rebind, source: path, quotesContent: ImportSource.isPrivileged(caller))
            for suffix in ["-wal", "-shm", "-journal"] { try FileSystem.removeIfPresent(temp + suffix) }
            try FileSystem.fsyncFile(temp)
            return Staged(
                account: account, path: temp, source: path, version: version, lastCompatibleVersion: lastCompatible, rows: rows, format: source.format)
        } catch {
            try? FileSystem.removeWithCompanions(temp)
            throw error
        }
    }

    /// Links a staged import into place as the account's file, under the account's lock (the
    /// caller's): the account is checked to have no file still, the version accepted, and the
    /// file linked with `link()`, which never replaces one. Blocking, and short.
    ///
    /// - Throws: `accountExists` when the account got a file meanwhile; what `accept` throws;
    ///   `storage`. Nothing is changed then, and ``discard(_:)`` removes the staged file.
    public func install(_ staged: Staged, accept: (_ version: Int, _ lastCompatible: Int) throws -> Void = { _, _ in }) throws -> Outcome {
        let account = staged.account
        try refuseExisting(account)
        try accept(staged.version, staged.lastCompatibleVersion)
        let target = root.accountPath(account)
        // Imported here on purpose: a handoff mark the file carries is this host's no more.
        try HandoffMark.remove(staged.path)
        guard try FileSystem.linkIntoPlace(staged.path, at: target) else {
            throw AccountdError(
                .accountExists, "account \(account) was created here while it was being imported; nothing was replaced",
                account: account.rawValue, file: target)
        }
        return Outcome(account: account, version: staged.version, rows: staged.rows, format: staged.format)
    }

    /// Removes what ``stage(_:as:rebind:caller:)`` built, if it is still there. Blocking.
    public func discard(_ staged: Staged) {
        try? FileSystem.removeWithCompanions(staged.path)
    }

    /// Refuses an account that has a file here: an import never replaces one.
    private func refuseExisting(_ account: AccountName) throws {
        let target = root.accountPath(account)
        guard FileSystem.entry(at: target) == .missing else {
            throw AccountdError(
                .accountExists,
                "account \(account) already exists here (\(target)); an import never replaces an account, and nothing was touched. "
                    + "Import under a new name (with --rebind), or remove the account first",
                account: account.rawValue, file: target)
        }
    }

    /// Checks the staged copy, binds it to `account` if asked, drops Litestream's tables and
    /// puts it in WAL mode. Unless `quotesContent`, no refusal quotes what the file holds.
    private func prepare(_ temp: String, account: AccountName, rebind: Bool, source: String, quotesContent: Bool) throws -> (Int, Int, Int64) {
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
                            "belongs to account \(quotesContent ? bound.map { AccountName.quoted($0) } ?? "(none)" : "another name"); import it as that account, or pass rebind (accountctl import --rebind) to make it account \(account)'s")
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
            try checkSchema(queue, version: facts.version, account: account, source: source)
            let rows = try queue.read { db in try Self.countRows(db) }
            return (facts.version, facts.lastCompatibleVersion, rows)
        } catch let error as AccountdError {
            throw error
        } catch {
            let reason = quotesContent ? ErrorText.of(error) : (error as? DatabaseError).map { "SQLite: \($0.resultCode)" } ?? "unreadable"
            throw Self.refusal(account, source, "cannot be read as an account file: \(reason)")
        }
    }

    /// Refuses a staged copy whose schema differs from the one the bundle gives a file at its
    /// version, as `Verify` compares them, naming each difference (never quoting SQL). A
    /// version the bundle has no schema for (newer, or below a declarative bundle's) is not
    /// compared.
    private func checkSchema(_ queue: DatabaseQueue, version: Int, account: AccountName, source: String) throws {
        guard let bundle, let expected = try bundle.schema(atVersion: version) else { return }
        let which = version == bundle.targetVersion ? "the bundle's target schema" : "the bundle's schema at version \(version)"
        let differences = try queue.read { db in
            SchemaDiff(leftName: "the file", rightName: which).differences(try SchemaReader.read(db), expected)
        }
        guard !differences.isEmpty else { return }
        throw AccountdError(
            .accountCorrupt,
            "import of account \(account) refused: \(source) is at version \(version), \(version == bundle.targetVersion ? "the bundle's" : "a version of the bundle"), but its schema is not the bundle's "
                + "(\(differences.count) difference(s), as 'accountctl verify' would report them: "
                + differences.prefix(5).joined(separator: "; ") + (differences.count > 5 ? "; ..." : "")
                + "); nothing was changed. Import an unchanged export of an account of this bundle ('accountctl export'), "
                + "or remove from the file what is not the bundle's",
            account: account.rawValue, file: source, details: differences)
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
