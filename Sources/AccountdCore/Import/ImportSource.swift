import AccountdProtocol
import Foundation

/// The file an `Import` reads, opened by the daemon under rules that keep its promises
/// whatever path an admin gives:
///
/// - an absolute path with no symbolic link in any component (the path is compared with
///   `realpath()` of it), opened with `O_NOFOLLOW`: the daemon reads the file that was
///   named, never one a link leads to;
/// - a regular file, looked at with `lstat` before it is opened (a device or FIFO is
///   never opened, so opening it cannot rewind a tape or block on a pipe) and again with
///   `fstat` after, which must be the same file;
/// - not inside the data root: a live account file read by another path would be read
///   without its WAL, and the data root's files come back by `Restore`, not by import;
/// - with no other hard link: a second name of a live account file (outside the data root)
///   would be read without the WAL beside the first;
/// - not the very file (same `st_dev` and `st_ino`) of a live account file or `device.sqlite`,
///   whatever the path (a bind mount of the single file has one link and no `-wal` beside it);
/// - not locked by another process (`/proc/locks`, by device and inode): every SQLite
///   connection in WAL mode locks its file, so a live database of another process (another
///   accountd's account file, bind-mounted here with its WAL left behind) is refused;
/// - without a non-empty `-wal` beside it: such a file's last transactions are in the WAL
///   and a copy of the main file alone would lose them;
/// - not empty, and smaller than the space free in the data root (64 MiB kept free);
/// - readable by the caller by its own mode bits (owner, group, others; the caller's
///   supplementary groups count; ACLs are not looked at), and every folder on the way to it
///   searchable (`x`) by the caller by the same rule, unless the caller is root or the
///   daemon's user: the daemon reads for the caller, not beyond what the caller could read
///   itself (a world-readable file in a folder the caller cannot enter is refused).
public final class ImportSource {
    /// Who asked for the import, as the kernel reported it.
    public struct Caller: Sendable {
        public var uid: UInt32
        public var gid: UInt32
        public var groups: [UInt32]

        public init(uid: UInt32, gid: UInt32, groups: [UInt32]) {
            self.uid = uid
            self.gid = gid
            self.groups = groups
        }
    }

    /// What the file holds, by its first bytes (never by its name).
    public enum Format: String, Sendable {
        /// A SQLite database: the `sqlite` export, or an account file copied off a machine.
        case sqlite
        /// SQL text: the `sql` export.
        case sql
    }

    /// The free space an import leaves in the data root, at least.
    static let spareBytes: Int64 = 64 << 20

    public let path: String
    /// The open file (read-only).
    let descriptor: Int32
    /// Its size in bytes.
    let size: Int64
    public let format: Format

    /// Opens `path` for `account`'s import under the rules above.
    ///
    /// - Parameter caller: who asked; nil skips the permission check (the offline tool, root).
    /// - Throws: `ProtocolError` `InvalidParameter` (`path`) saying which rule the path
    ///   breaks; ``AccountdError`` `accountCorrupt` for a `jsonl` export, `storage` when the
    ///   data root has not the room.
    init(path: String, account: AccountName, root: DataRoot, caller: Caller?) throws {
        func refuse(_ why: String) -> ProtocolError {
            ProtocolError(.invalidParameter, "import of account \(account): \(path) \(why); nothing was changed", facts: [("parameter", "path")])
        }
        guard path.hasPrefix("/") else { throw refuse("is not an absolute path") }
        let named = URL(fileURLWithPath: path).standardizedFileURL.path
        // Before anything is resolved or looked at as the daemon: a caller learns nothing of
        // what lies behind a folder it cannot enter, not even whether the file exists.
        if let caller, !Self.isPrivileged(caller), let why = Self.unreachable(named, for: caller) { throw refuse(why) }
        guard let resolved = Self.realPath(path) else { throw refuse("cannot be found (\(String(cString: strerror(errno))))") }
        guard resolved == named else {
            throw refuse("goes through a symbolic link (it resolves to \(resolved)); import reads no link: give the file's own path")
        }
        let rootResolved = Self.realPath(root.path) ?? root.path
        guard !(resolved + "/").hasPrefix(rootResolved + "/") else {
            throw refuse("is inside the data root \(rootResolved); restore a snapshot with 'accountctl restore' instead, or copy the file out first")
        }
        var before = stat()
        guard lstat(path, &before) == 0 else { throw refuse("cannot be looked at (\(String(cString: strerror(errno))))") }
        guard before.st_mode & S_IFMT == S_IFREG else { throw refuse("is not a regular file (a folder, device, FIFO or socket is never read)") }
        guard before.st_size > 0 else { throw refuse("is empty (0 bytes)") }
        guard before.st_nlink <= 1 else {
            throw refuse(
                "has \(before.st_nlink) hard links: another name of it may be a live database (an account file) whose last transactions are in a WAL beside that name; copy it first (sqlite3 FILE '.backup COPY')")
        }
        if let live = Self.liveFile(sameAs: before, root: root) {
            throw refuse(
                "is the same file (device \(before.st_dev), inode \(before.st_ino)) as the live file \(live) of the data root, reached by another path (a bind mount): it would be read without its WAL; export the account ('accountctl export') or copy it with 'sqlite3 FILE .backup COPY' first")
        }
        if let holder = OtherProcessLocks.holder(device: UInt64(before.st_dev), inode: UInt64(before.st_ino)) {
            throw refuse(
                "is held locked by another process (\(holder == -1 ? "one" : "pid \(holder)")): it is a live database there (an account file of another accountd, say), whose last transactions may be in a WAL this path does not show; "
                    + "export it where it lives ('accountctl export', or 'sqlite3 FILE .backup COPY') and import the copy, or stop that process first")
        }
        if let caller, !Self.isPrivileged(caller) {
            guard Self.readable(before, by: caller) else {
                throw refuse("is not readable by the caller (uid \(caller.uid)) by its permissions; the daemon reads only what its caller could")
            }
        }
        var wal = stat()
        if lstat(path + "-wal", &wal) == 0, wal.st_size > 0 {
            throw refuse(
                "has a -wal file beside it holding transactions not yet in the file; checkpoint it first (sqlite3 FILE 'PRAGMA wal_checkpoint(TRUNCATE)') or copy it with 'sqlite3 FILE .backup COPY'")
        }
        if let free = DiskSpace.available(at: root.path), Int64(before.st_size) + Self.spareBytes > free {
            throw AccountdError(
                .storage,
                "import of account \(account): \(path) is \(before.st_size) bytes, more than the data root has free (\(free) bytes, of which 64 MiB stay free); nothing was changed",
                account: account.rawValue, file: path)
        }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw refuse("cannot be opened (\(String(cString: strerror(errno))))") }
        var after = stat()
        guard fstat(fd, &after) == 0, after.st_dev == before.st_dev, after.st_ino == before.st_ino, after.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw refuse("changed while it was being opened")
        }
        var head = [UInt8](repeating: 0, count: 16)
        let count = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 16, 0) }
        let first = head.prefix(max(count, 0))
        if Array(first) == Array("SQLite format 3\0".utf8) {
            format = .sqlite
        } else if first.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{") {
            close(fd)
            throw AccountdError(
                .accountCorrupt,
                "import of account \(account): \(path) is a jsonl export (rows as JSON objects); it carries the rows but not the schema, and cannot be imported. "
                    + "Export the account with --format sql or --format sqlite to have a file that comes back; nothing was changed",
                account: account.rawValue, file: path)
        } else {
            format = .sql
        }
        self.path = path
        descriptor = fd
        size = Int64(after.st_size)
    }

    deinit { close(descriptor) }

    /// The data root's live database (an account file, or `device.sqlite`) that is the very
    /// file `info` describes (same `st_dev` and `st_ino`), whatever path reached it; nil when none is.
    private static func liveFile(sameAs info: stat, root: DataRoot) -> String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.accountsDirectory)) ?? []
        let candidates = names.map { root.accountsDirectory + "/" + $0 } + [root.devicePath]
        for candidate in candidates {
            var other = stat()
            if lstat(candidate, &other) == 0, other.st_dev == info.st_dev, other.st_ino == info.st_ino { return candidate }
        }
        return nil
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether `caller` is root or the daemon's user (nil: the offline tool), whom the
    /// permission checks do not apply to and whom errors may quote a file's content to.
    static func isPrivileged(_ caller: Caller?) -> Bool {
        guard let caller else { return true }
        return caller.uid == 0 || caller.uid == getuid()
    }

    /// Whether `info`'s mode bits let `caller` read it.
    private static func readable(_ info: stat, by caller: Caller) -> Bool {
        allows(info, caller, owner: S_IRUSR, group: S_IRGRP, others: S_IROTH)
    }

    /// Whether `info`'s mode bits give `caller` the owner's, the group's or the others' bit,
    /// as the kernel picks the class (owner first, then any of the caller's groups).
    private static func allows(_ info: stat, _ caller: Caller, owner: mode_t, group: mode_t, others: mode_t) -> Bool {
        if info.st_uid == caller.uid { return info.st_mode & owner != 0 }
        if info.st_gid == caller.gid || caller.groups.contains(info.st_gid) { return info.st_mode & group != 0 }
        return info.st_mode & others != 0
    }

    /// Why `caller` cannot reach `path` (absolute) by the mode bits of the folders on the way
    /// (`/` first): one it may not search (`x`), or a symbolic link among them; nil when every
    /// folder lets it through. A missing component is left to the checks after this one.
    private static func unreachable(_ path: String, for caller: Caller) -> String? {
        let parts = path.split(separator: "/").dropLast()
        var folder = ""
        for index in 0...parts.count {
            if index > 0 { folder += "/" + parts[parts.startIndex + index - 1] }
            let shown = folder.isEmpty ? "/" : folder
            var info = stat()
            guard lstat(shown, &info) == 0 else { return nil }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                return info.st_mode & S_IFMT == S_IFLNK
                    ? "goes through a symbolic link (\(shown)); import reads no link: give the file's own path" : nil
            }
            guard allows(info, caller, owner: S_IXUSR, group: S_IXGRP, others: S_IXOTH) else {
                return "is in folder \(shown), which the caller (uid \(caller.uid)) cannot enter by its permissions; the daemon reads only what its caller could"
            }
        }
        return nil
    }

    /// Copies the file to `destination` (created 0600, exclusively, not through a link) and
    /// syncs the copy.
    func copy(to destination: String) throws {
        let output = open(destination, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw AccountdError.storage("creating", path: destination, errno: errno) }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw AccountdError.storage("reading", path: path, errno: errno)
            }
            if count == 0 { break }
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes { write(output, $0.baseAddress! + written, count - written) }
                if step < 0 {
                    if errno == EINTR { continue }
                    throw AccountdError.storage("writing", path: destination, errno: errno)
                }
                written += step
            }
            offset += off_t(count)
        }
        guard fsync(output) == 0 else { throw AccountdError.storage("fsync of", path: destination, errno: errno) }
    }

    /// The file's bytes, mapped read-only (not read into memory), for `body`.
    func withMappedBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let mapped: UnsafeMutableRawPointer? = mmap(nil, Int(size), PROT_READ, MAP_PRIVATE, descriptor, 0)
        guard let base = mapped, base != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw AccountdError.storage("mapping", path: path, errno: errno)
        }
        defer { munmap(base, Int(size)) }
        return try body(UnsafeRawBufferPointer(start: base, count: Int(size)))
    }
}
