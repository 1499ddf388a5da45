import AccountdProtocol
import Foundation
import GRDB

/// A consistent copy of an account file, kept under `snapshots/<account>/`.
public struct SnapshotInfo: Sendable, Hashable {
    /// The snapshot's name, e.g. `20261121T061000.123Z-v2-before-migrate`.
    public var name: String
    /// The schema version of the copy.
    public var version: Int
    /// When it was taken, ISO 8601.
    public var createdAt: String
    public var sizeBytes: Int64
    /// The absolute path of the copy.
    public var path: String
}

/// Takes, lists, prunes and finds snapshots.
///
/// A snapshot is copied inside a read transaction of the account's connection (a
/// transactionally consistent copy) into a temporary name, fsynced, then renamed into
/// place, so a listed snapshot is always complete. When the file's WAL is empty, the
/// transaction reads the main file alone and no checkpoint can write into it while the
/// transaction lasts, so the kernel copies the file whole; otherwise SQLite's backup API
/// copies it page by page. After each snapshot, ``retention`` decides which older ones go.
struct SnapshotStore: Sendable {
    var root: DataRoot
    /// Which snapshots are kept.
    var retention: SnapshotRetention
    /// How long the copy waits for another process's lock on the account file.
    var busy: Duration = Connections.defaultBusyTimeout
    /// Snapshots retention leaves in place for now (a restored one while its account reopens).
    var pins = SnapshotPins()

    /// Copies the account file at `source` into a new snapshot, then applies retention.
    ///
    /// - Parameter protecting: snapshots retention must leave in place this time (the one
    ///   a restore is about to copy back).
    ///   - pruning: apply retention now; false leaves it to the caller (``prune(_:keeping:)``),
    ///     once what the snapshot was taken for has succeeded.
    func take(_ account: AccountName, source: String, reason: String, protecting: Set<String> = [], pruning: Bool = true) throws -> SnapshotInfo {
        do {
            // Read through SQLite's file layer (see ReadOnlyFile): closing it takes no lock from a connection.
            let file = try ReadOnlyFile(source)
            defer { file.close() }
            let queue = try DatabaseQueue(
                path: source, configuration: Connections.configuration(foreignKeys: false, readonly: true, label: "snapshot", busy: busy))
            defer { try? queue.close() }
            return try queue.read { db in try take(account, reading: db, file: file, reason: reason, protecting: protecting, pruning: pruning) }
        } catch {
            throw Self.failed(account, error, file: source)
        }
    }

    /// Copies the database of `source`, a connection to the account's file, into a new
    /// snapshot, then applies retention. Inside a transaction of `source`, the copy is of
    /// what that transaction sees.
    ///
    /// - Parameters:
    ///   - file: the account's file, read through SQLite's file layer (see ``ReadOnlyFile``).
    ///   - protecting: snapshots retention must leave in place this time.
    ///   - reusingSameState: when the newest snapshot taken for the same `reason` at the same
    ///     version holds the same database as this copy (``SnapshotIdentity``), return it and
    ///     keep no second one: a retry of a failed migration of an unchanged file then takes
    ///     no new snapshot, and retention removes nothing.
    func take(
        _ account: AccountName, reading source: Database, file: ReadOnlyFile, reason: String, protecting: Set<String> = [],
        reusingSameState: Bool = false, pruning: Bool = true
    ) throws -> SnapshotInfo {
        let folder = root.snapshotDirectory(account)
        // A folder made now holds nothing to clear away or to prune.
        let first = try FileSystem.ensureDirectory(folder)
        if !first { try removeStaleTemporaries(folder) }
        let now = Date()
        let (version, name, path, temp): (Int, String, String, String)
        do {
            version = try Int.fetchOne(source, sql: "PRAGMA user_version") ?? 0
            name = Self.uniqueName("\(Timestamp.compact(now))-v\(version)-\(reason)", in: folder)
            temp = folder + "/." + name + ".tmp"
            path = folder + "/" + name + ".sqlite"
        } catch {
            throw Self.failed(account, error, file: root.accountPath(account))
        }
        do {
            // The transaction is open (it read user_version): with the WAL empty now, it reads
            // the main file alone, and a checkpoint would need the read lock it holds.
            if FileSystem.size(of: file.path + "-wal") == 0 {
                try file.copy(to: temp) { try Self.markRollbackJournal($0, path: temp) }
            } else {
                try copyPages(source, to: temp)
            }
            if reusingSameState, let same = sameState(as: temp, account: account, version: version, reason: reason) {
                try FileSystem.removeIfPresent(temp)
                return same
            }
            try FileSystem.durableRename(temp, to: path)
        } catch {
            try? FileSystem.removeIfPresent(temp)
            throw Self.failed(account, error, file: path)
        }
        if !first && pruning { try prune(account, now: now, protected: protecting.union([name])) }
        return SnapshotInfo(
            name: name, version: version, createdAt: Timestamp.string(now), sizeBytes: FileSystem.size(of: path), path: path)
    }

    /// The newest snapshot of `account` taken for `reason` at `version`, if it holds the same
    /// database as the copy at `copy`; nil otherwise.
    private func sameState(as copy: String, account: AccountName, version: Int, reason: String) -> SnapshotInfo? {
        let suffix = "-v\(version)-\(reason)"
        let candidate = list(account, readingVersions: false).first { snapshot in
            // `<stamp>-v2-before-migrate`, or `...-before-migrate-2` for a second one in the same millisecond.
            let tail = snapshot.name.drop { $0 != "-" }
            return tail == suffix || (tail.hasPrefix(suffix + "-") && tail.dropFirst(suffix.count + 1).allSatisfy(\.isNumber))
        }
        guard let candidate, !FileSystem.exists(candidate.path + "-wal"), SnapshotIdentity.sameDatabase(copy, candidate.path) else {
            return nil
        }
        return SnapshotInfo(
            name: candidate.name, version: version, createdAt: candidate.createdAt, sizeBytes: FileSystem.size(of: candidate.path),
            path: candidate.path)
    }

    /// Copies the database `source` sees into a new file at `temp` with SQLite's backup API,
    /// then marks it a rollback-journal file and flushes it.
    private func copyPages(_ source: Database, to temp: String) throws {
        try FileSystem.createExclusive(temp)
        var config = Configuration()
        config.label = "snapshot-copy"
        // The copy is a new file that nothing else reads until it is renamed into place,
        // and it is fsynced whole before that: a journal, or syncs while it is written,
        // buy nothing.
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = OFF")
            try db.execute(sql: "PRAGMA synchronous = OFF")
        }
        let copy = try DatabaseQueue(path: temp, configuration: config)
        try copy.writeWithoutTransaction { db in try source.backup(to: db) }
        try copy.close()
        let fd = open(temp, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw AccountdError.storage("opening", path: temp, errno: errno) }
        defer { close(fd) }
        try Self.markRollbackJournal(fd, path: temp)
        guard fsync(fd) == 0 else { throw AccountdError.storage("fsync of", path: temp, errno: errno) }
    }

    /// A snapshot that could not be taken: `error`, as `storage`, or itself when it is an ``AccountdError``.
    private static func failed(_ account: AccountName, _ error: any Error, file: String) -> AccountdError {
        if var error = error as? AccountdError {
            // Said once: an error from the inner `take` already names the snapshot.
            if error.kind == .storage && !error.message.hasPrefix("taking a snapshot of account") {
                error.message = "taking a snapshot of account \(account) failed: \(error.message); the account was not changed"
            }
            return error
        }
        return AccountdError(
            .storage, "taking a snapshot of account \(account) failed: \(ErrorText.of(error)); the account was not changed",
            account: account.rawValue, file: file)
    }

    /// Marks the copy open at `fd` as a rollback-journal file, not a WAL one.
    ///
    /// A copy of a WAL-mode account says "WAL" in its header (bytes 18 and 19, the file
    /// format's write and read versions: 2). A snapshot is one self-contained file: opened
    /// read-only as WAL, SQLite would leave `-wal` and `-shm` beside it. Versions 1 and 1 are
    /// a rollback-journal file, as `PRAGMA journal_mode = DELETE` would have left it; nothing
    /// else in the file depends on them.
    private static func markRollbackJournal(_ fd: Int32, path: String) throws {
        let versions: [UInt8] = [1, 1]
        guard versions.withUnsafeBytes({ pwrite(fd, $0.baseAddress, 2, 18) }) == 2 else {
            throw AccountdError.storage("writing the header of", path: path, errno: errno)
        }
    }

    /// Copies a file that SQLite cannot read (a corrupt account) byte for byte, with its WAL, into a snapshot.
    func takeRaw(_ account: AccountName, source: String, reason: String, protecting: Set<String> = [], pruning: Bool = true) throws -> SnapshotInfo {
        let folder = root.snapshotDirectory(account)
        try FileSystem.ensureDirectory(folder)
        let now = Date()
        let name = Self.uniqueName("\(Timestamp.compact(now))-v0-\(reason)", in: folder)
        let path = folder + "/" + name + ".sqlite"
        let temp = folder + "/." + name + ".tmp"
        do {
            try ReadOnlyFile(source).copy(to: temp)
            if FileSystem.exists(source + "-wal") {
                try ReadOnlyFile(source + "-wal").copy(to: path + "-wal")
            }
            try FileSystem.durableRename(temp, to: path)
        } catch {
            // A full disk leaves no half copy behind: neither the temporary file nor a lone WAL.
            try? FileSystem.removeIfPresent(temp)
            if !FileSystem.exists(path) { try? FileSystem.removeIfPresent(path + "-wal") }
            throw Self.failed(account, error, file: source)
        }
        if pruning { try prune(account, now: now, protected: protecting.union([name])) }
        return SnapshotInfo(name: name, version: 0, createdAt: Timestamp.string(now), sizeBytes: FileSystem.size(of: path), path: path)
    }

    /// The account's snapshots, newest first (see ``SnapshotOrder``: a name dated in the
    /// future comes last).
    ///
    /// - Parameter readingVersions: read each snapshot's version and size from its file;
    ///   false leaves both 0, for retention, which goes by names alone.
    ///
    /// The folder is read through ``DataRoot/snapshotFolder(_:)``: a `snapshots/<account>`
    /// that is a link lists nothing (and every locked operation refuses the account).
    func list(_ account: AccountName, readingVersions: Bool = true, now: Date = Date()) -> [SnapshotInfo] {
        let folder = root.snapshotDirectory(account)
        let files = ((try? root.snapshotFolder(account)) ?? nil)?.names() ?? []
        let names = files.filter { $0.hasSuffix(".sqlite") && !$0.hasPrefix(".") }.map { String($0.dropLast(".sqlite".count)) }
        return SnapshotOrder.newestFirst(names, now: now).map { name in
            let path = folder + "/" + name + ".sqlite"
            return SnapshotInfo(
                name: name, version: readingVersions ? (try? Self.version(of: path)) ?? 0 : 0, createdAt: Self.createdAt(fromName: name),
                sizeBytes: readingVersions ? FileSystem.size(of: path) : 0, path: path)
        }
    }

    /// The snapshot called `name`, or the newest when `name` is nil.
    func find(_ account: AccountName, name: String?) throws -> SnapshotInfo {
        let all = list(account)
        if let name {
            let wanted = name.hasSuffix(".sqlite") ? String(name.dropLast(".sqlite".count)) : name
            if let found = all.first(where: { $0.name == wanted }) { return found }
            throw AccountdError(
                .snapshotNotFound,
                "account \(account) has no snapshot named \(AccountName.quoted(name)); 'accountctl snapshots \(account)' lists them",
                account: account.rawValue)
        }
        guard let newest = all.first else {
            throw AccountdError(.snapshotNotFound, "account \(account) has no snapshots", account: account.rawValue)
        }
        return newest
    }

    /// Removes the snapshots retention lets go, through the folder's descriptor: never
    /// through a link. (A purge erases the whole folder: ``AccountPurge``.)
    /// Applies retention to `account`'s snapshots, leaving `kept` (names) in place: after a
    /// snapshot taken without ``take(_:source:reason:protecting:pruning:)``'s pruning.
    func prune(_ account: AccountName, keeping kept: Set<String>) throws {
        try prune(account, now: Date(), protected: kept)
    }

    /// Removes a snapshot taken for an operation that then failed and changed nothing.
    func discard(_ snapshot: SnapshotInfo) {
        for suffix in ["", "-wal", "-shm"] { try? FileSystem.removeIfPresent(snapshot.path + suffix) }
    }

    private func prune(_ account: AccountName, now: Date, protected: Set<String>) throws {
        guard let folder = try root.snapshotFolder(account) else { return }
        let kept = protected.union(pins.names(account))
        for old in retention.expired(list(account, readingVersions: false, now: now), now: now, protected: kept) {
            try folder.remove(old.name + ".sqlite")
            try folder.remove(old.name + ".sqlite-wal")
        }
    }

    private func removeStaleTemporaries(_ folder: String) throws {
        for file in FileSystem.contents(of: folder) where file.hasPrefix(".") && file.hasSuffix(".tmp") {
            try FileSystem.removeIfPresent(folder + "/" + file)
        }
    }

    /// `base`, or `base-2`, `base-3`, ... when two snapshots are taken within one millisecond.
    static func uniqueName(_ base: String, in folder: String) -> String {
        var name = base
        var counter = 2
        while FileSystem.exists(folder + "/" + name + ".sqlite") || FileSystem.exists(folder + "/." + name + ".tmp") {
            name = "\(base)-\(counter)"
            counter += 1
        }
        return name
    }

    /// `user_version` from a SQLite file's header; 0 for a file that has none.
    static func version(of path: String) throws -> Int {
        SQLiteHeader(try ReadOnlyFile(path).prefix(count: SQLiteHeader.size))?.userVersion ?? 0
    }

    /// When the snapshot called `name` was taken, from the timestamp its name begins with;
    /// nil when the name has none.
    static func takenAt(fromName name: String) -> Date? {
        try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(createdAt(fromName: name))
    }

    /// `20261121T061000.123Z-v2-...` → `2026-11-21T06:10:00.123Z`.
    static func createdAt(fromName name: String) -> String {
        let stamp = Array(name.prefix { $0 != "-" })
        guard stamp.count >= 16 else { return "" }
        let s = String(stamp)
        func part(_ from: Int, _ length: Int) -> String {
            let start = s.index(s.startIndex, offsetBy: from)
            return String(s[start..<s.index(start, offsetBy: length)])
        }
        return "\(part(0, 4))-\(part(4, 2))-\(part(6, 2))T\(part(9, 2)):\(part(11, 2)):\(part(13, 2))" + String(s.dropFirst(15))
    }
}
