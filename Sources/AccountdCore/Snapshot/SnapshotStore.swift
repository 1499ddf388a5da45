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
/// A snapshot is made with `VACUUM INTO` (a transactionally consistent copy) into
/// a temporary name, fsynced, then renamed into place, so a listed snapshot is
/// always complete. After each snapshot, ``retention`` decides which older ones go.
struct SnapshotStore: Sendable {
    var root: DataRoot
    /// Which snapshots are kept.
    var retention: SnapshotRetention

    /// Copies the account file at `source` into a new snapshot, then applies retention.
    ///
    /// - Parameter protecting: snapshots retention must leave in place this time (the one
    ///   a restore is about to copy back).
    func take(_ account: AccountName, source: String, reason: String, protecting: Set<String> = []) throws -> SnapshotInfo {
        let folder = root.snapshotDirectory(account)
        try FileSystem.ensureDirectory(folder)
        try removeStaleTemporaries(folder)
        let now = Date()
        let version = try Self.version(of: source)
        let name = Self.uniqueName("\(Timestamp.compact(now))-v\(version)-\(reason)", in: folder)
        let temp = folder + "/." + name + ".tmp"
        let path = folder + "/" + name + ".sqlite"
        try FileSystem.createExclusive(temp)
        do {
            let queue = try DatabaseQueue(
                path: source, configuration: Connections.configuration(foreignKeys: false, readonly: true, label: "snapshot"))
            try queue.inDatabase { db in
                // VACUUM INTO writes the copy with this connection's synchronous level. The copy
                // is fsynced whole below before it is renamed into place, so syncing it while it
                // is written (its journal, its folder, the file: four flushes) buys nothing.
                try db.execute(sql: "PRAGMA synchronous = OFF")
                try db.execute(sql: "VACUUM INTO ?", arguments: [temp])
            }
            try queue.close()
            try FileSystem.fsyncFile(temp)
            try FileSystem.durableRename(temp, to: path)
        } catch {
            try? FileSystem.removeIfPresent(temp)
            if let error = error as? AccountdError { throw error }
            throw AccountdError(
                .storage, "taking a snapshot of account \(account) failed: \(ErrorText.of(error)); the account was not changed",
                account: account.rawValue, file: path)
        }
        try prune(account, now: now, protected: protecting.union([name]))
        return SnapshotInfo(
            name: name, version: version, createdAt: Timestamp.string(now), sizeBytes: FileSystem.size(of: path), path: path)
    }

    /// Copies a file that SQLite cannot read (a corrupt account) byte for byte, with its WAL, into a snapshot.
    func takeRaw(_ account: AccountName, source: String, reason: String, protecting: Set<String> = []) throws -> SnapshotInfo {
        let folder = root.snapshotDirectory(account)
        try FileSystem.ensureDirectory(folder)
        let now = Date()
        let name = Self.uniqueName("\(Timestamp.compact(now))-v0-\(reason)", in: folder)
        let path = folder + "/" + name + ".sqlite"
        let temp = folder + "/." + name + ".tmp"
        try FileSystem.copyFile(source, to: temp)
        if FileSystem.exists(source + "-wal") {
            try FileSystem.copyFile(source + "-wal", to: path + "-wal")
        }
        try FileSystem.durableRename(temp, to: path)
        try prune(account, now: now, protected: protecting.union([name]))
        return SnapshotInfo(name: name, version: 0, createdAt: Timestamp.string(now), sizeBytes: FileSystem.size(of: path), path: path)
    }

    /// The account's snapshots, newest first.
    func list(_ account: AccountName) -> [SnapshotInfo] {
        let folder = root.snapshotDirectory(account)
        return FileSystem.contents(of: folder).filter { $0.hasSuffix(".sqlite") && !$0.hasPrefix(".") }.sorted(by: >).map { file in
            let path = folder + "/" + file
            let name = String(file.dropLast(".sqlite".count))
            return SnapshotInfo(
                name: name, version: (try? Self.version(of: path)) ?? 0, createdAt: Self.createdAt(fromName: name),
                sizeBytes: FileSystem.size(of: path), path: path)
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

    private func prune(_ account: AccountName, now: Date, protected: Set<String>) throws {
        for old in retention.expired(list(account), now: now, protected: protected) {
            try FileSystem.removeIfPresent(old.path)
            try FileSystem.removeIfPresent(old.path + "-wal")
        }
    }

    /// Removes every snapshot of the account and its folder, temporaries included (a purge).
    ///
    /// - Returns: how many snapshots there were.
    /// - Throws: `storage` when a file cannot be removed; what was removed stays removed.
    func removeAll(_ account: AccountName) throws -> Int {
        let folder = root.snapshotDirectory(account)
        guard FileSystem.exists(folder) else { return 0 }
        let count = list(account).count
        for file in FileSystem.contents(of: folder) {
            try FileSystem.removeIfPresent(folder + "/" + file)
        }
        try FileSystem.removeDirectoryIfPresent(folder)
        try FileSystem.fsyncDirectory(root.snapshotsDirectory)
        return count
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

    /// `user_version` from a SQLite file header (bytes 60-63, big-endian).
    static func version(of path: String) throws -> Int {
        let header = try FileSystem.prefix(of: path, count: 100)
        guard header.count == 100 else { return 0 }
        return Int(Int32(bitPattern: UInt32(header[60]) << 24 | UInt32(header[61]) << 16 | UInt32(header[62]) << 8 | UInt32(header[63])))
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
