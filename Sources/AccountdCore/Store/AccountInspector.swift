import AccountdProtocol
import GRDB

/// What an account file says about itself.
struct AccountFacts: Sendable {
    var version: Int
    var lastCompatibleVersion: Int
    var createdAt: String?
    var applied: [AppliedMigration]
}

/// Reads an account file without changing a byte of it.
///
/// A refused file (foreign, corrupt, bound to another account, too new) is left exactly as
/// it was: no checkpoint, no recovery, no schema change. The file is read on a read-only
/// connection, except where ``inspect(path:account:deep:usable:writableBelow:then:afterwards:)``
/// may go on to migrate it and a writable connection provably writes nothing to it first.
enum AccountInspector {
    /// The checks that decide whether a file is a sound account file for `account`.
    ///
    /// - Parameter deep: also run SQLite's `quick_check` over every page.
    /// - Throws: ``AccountdError`` of kind `accountCorrupt` with the reason, `accountBusy`
    ///   when SQLite reports the file locked, or `storage` when it cannot be opened at all or
    ///   the disk is full or failing (never `accountCorrupt` for those).
    /// - Parameter usable: whether the daemon will use a file with these facts; for one it
    ///   will not (a too-new file, say), the `-wal`/`-shm` that opening it created are removed.
    /// - Parameter busy: how long to wait for a lock another process holds on the file
    ///   (``Connections/configuration(foreignKeys:readonly:label:busy:)``); zero waits not at all.
    static func inspect(
        path: String, account: AccountName, deep: Bool, usable: (AccountFacts) -> Bool = { _ in true },
        busy: Duration = Connections.defaultBusyTimeout
    ) throws -> AccountFacts {
        let none: (Database, AccountFacts, ReadOnlyFile) -> Void? = { _, _, _ in nil }
        return try inspect(
            path: path, account: account, deep: deep, usable: usable, writableBelow: .min, busy: busy, then: none,
            afterwards: { _, _, _ in () }
        ).facts
    }

    /// ``inspect(path:account:deep:usable:)``, then more work on the same connection, for a
    /// file the checks accepted and `usable` allows:
    ///
    /// - `then`, in the same read transaction, so that what it reads is the file as inspected.
    ///   It also gets the file the header was read from (a ``ReadOnlyFile``), to copy it.
    ///   The store takes the snapshot before a migration here.
    /// - `afterwards`, when `then` returned a value, after that transaction, with the
    ///   connection if it is writable (nil if it is read-only). The store migrates here.
    ///
    /// The connection is writable when the file's header says it is below `writableBelow`, in
    /// WAL mode, and there is neither a WAL with frames nor a rollback journal beside it. Until
    /// a write transaction, SQLite then writes nothing to the main file, and closing the
    /// connection has no frame to checkpoint: a file the checks refuse keeps every byte, as on
    /// a read-only connection. One open of the file serves the checks, the snapshot and the
    /// migration.
    static func inspect<T, U>(
        path: String, account: AccountName, deep: Bool, usable: (AccountFacts) -> Bool = { _ in true }, writableBelow: Int,
        busy: Duration = Connections.defaultBusyTimeout,
        then: (Database, AccountFacts, ReadOnlyFile) throws -> T?, afterwards: (DatabaseQueue?, AccountFacts, T) throws -> U
    ) throws -> (facts: AccountFacts, result: U?) {
        switch FileSystem.entry(at: path) {
        case .missing:
            throw AccountdError(.accountNotFound, "account \(account) has no file at \(path)", account: account.rawValue, file: path)
        case .symlink:
            throw AccountdError.corrupt(account, path: path, "is a symbolic link; accountd never follows links inside the data root")
        case .directory, .other:
            throw AccountdError.corrupt(account, path: path, "is not a regular file")
        case .regularFile(let size):
            if size == 0 {
                throw AccountdError.corrupt(account, path: path, "is empty (0 bytes), not an accountd account file")
            }
        }
        // Read through SQLite's file layer (see ReadOnlyFile): closing it takes no lock from a connection.
        let file = try ReadOnlyFile(path)
        defer { file.close() }
        guard let header = SQLiteHeader(try file.prefix(count: SQLiteHeader.size)) else {
            throw AccountdError.corrupt(account, path: path, "is not a SQLite database (it lacks the SQLite file header)")
        }
        // Opening a WAL-mode file, even read-only, makes SQLite create -shm (and maybe -wal)
        // beside it. For a file that is then refused, those are removed again, so a refusal
        // leaves the folder exactly as it was.
        let companions = ["-wal", "-shm"].filter { !FileSystem.exists(path + $0) }
        var refused = true
        defer {
            if refused {
                for suffix in companions where FileSystem.size(of: path + suffix) == 0 || suffix == "-shm" {
                    try? FileSystem.removeIfPresent(path + suffix)
                }
            }
        }
        let writable =
            header.userVersion < writableBelow && header.isWAL && FileSystem.size(of: path + "-wal") == 0
            && !FileSystem.exists(path + "-journal")
        let queue = try mappingErrors(account, path, busy: busy) {
            try DatabaseQueue(
                path: path,
                configuration: Connections.configuration(
                    foreignKeys: false, readonly: !writable, label: writable ? "migrate" : "inspect", busy: busy))
        }
        defer { try? queue.close() }
        let (found, within) = try mappingErrors(account, path, busy: busy) {
            try queue.read { db in
                let found = try Self.facts(db, path: path, account: account, deep: deep)
                refused = !usable(found)
                return (found, refused ? nil : try then(db, found, file))
            }
        }
        guard let within else { return (found, nil) }
        return (found, try afterwards(writable ? queue : nil, found, within))
    }

    /// `body`, with SQLite's errors turned into the store's: locked → `accountBusy`, a full or
    /// failing disk, or a file that cannot be opened → `storage`, anything else → `accountCorrupt`.
    /// A lock is another process's (the store's own operations on the account wait for its
    /// hold, not for SQLite), and was waited for `busy`.
    private static func mappingErrors<R>(_ account: AccountName, _ path: String, busy: Duration, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as DatabaseError {
            if let disk = ErrorText.diskProblem(error, near: path) {
                throw AccountdError.diskProblem(account, path: path, disk)
            }
            switch error.resultCode.primaryResultCode {
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                throw AccountdError.lockedByOtherProcess(account, path: path, waited: busy > .zero ? busy : nil)
            case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_NOMEM, .SQLITE_READONLY:
                throw AccountdError(
                    .storage, "account \(account): \(path) cannot be opened: \(error.message ?? "\(error.resultCode)")",
                    account: account.rawValue, file: path)
            default:
                throw AccountdError.corrupt(account, path: path, "cannot be read by SQLite: \(error.message ?? "\(error.resultCode)")")
            }
        }
    }

    /// The checks, in a read transaction.
    static func facts(_ db: Database, path: String, account: AccountName, deep: Bool) throws -> AccountFacts {
        let applicationID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        if applicationID != AccountRecords.applicationID {
            throw AccountdError.corrupt(
                account, path: path,
                "is a SQLite database but not an accountd account file (application_id 0x\(String(UInt32(bitPattern: applicationID), radix: 16)), expected 0x61636374)")
        }
        if deep {
            let problems = try String.fetchAll(db, sql: "PRAGMA quick_check(5)")
            if problems != ["ok"] {
                throw AccountdError.corrupt(
                    account, path: path, "fails SQLite's integrity check: " + problems.joined(separator: "; "))
            }
        }
        guard try db.tableExists("accountd_meta"), try db.tableExists("accountd_migrations") else {
            throw AccountdError.corrupt(account, path: path, "has accountd's application_id but lacks its accountd_meta records")
        }
        let meta = try AccountRecords.meta(db)
        let bound = meta["account"].flatMap { String.fromDatabaseValue($0) }
        if try !AccountRecords.isBound(db, to: account) {
            throw AccountdError.corrupt(
                account, path: path,
                "belongs to account \(bound.map { AccountName.quoted($0) } ?? "(none)"): it was renamed or copied from another account, and accountd will not use one account's data as another's")
        }
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let lastCompatible = meta["last_compatible_version"].flatMap { Int.fromDatabaseValue($0) } ?? version
        return AccountFacts(
            version: version, lastCompatibleVersion: lastCompatible,
            createdAt: meta["created_at"].flatMap { String.fromDatabaseValue($0) }, applied: try AccountRecords.applied(db))
    }
}
