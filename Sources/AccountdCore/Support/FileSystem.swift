import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The few filesystem operations the store needs, with the durability and
/// permission rules spelled out: folders 0700, files 0600, no symlinks followed,
/// and every atomic replacement done as temp file, fsync, rename, fsync folder.
///
/// These take paths. What removes, moves or lists whole sets of an account's files goes
/// through ``DataRootFolder`` instead, relative to the data root's descriptor.
enum FileSystem {
    /// What sits at a path, looked at without following a symlink.
    enum Entry: Equatable {
        case missing
        case regularFile(size: Int64)
        case directory
        case symlink
        case other
    }

    static func entry(at path: String) -> Entry {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regularFile(size: Int64(info.st_size))
        case S_IFDIR: return .directory
        case S_IFLNK: return .symlink
        default: return .other
        }
    }

    static func exists(_ path: String) -> Bool { entry(at: path) != .missing }

    /// The size in bytes of a regular file, or 0.
    static func size(of path: String) -> Int64 {
        if case .regularFile(let size) = entry(at: path) { return size }
        return 0
    }

    /// Creates `path` as a 0700 folder, or tightens an existing one to 0700.
    ///
    /// - Throws: ``AccountdError`` when the path is a symlink or not a folder, or mkdir fails.
    ///
    /// - Returns: whether the folder was created now (an empty folder).
    @discardableResult
    static func ensureDirectory(_ path: String) throws -> Bool {
        switch entry(at: path) {
        case .directory:
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & 0o7777 != 0o700 {
                guard chmod(path, 0o700) == 0 else {
                    throw AccountdError.storage("setting mode 0700 on", path: path, errno: errno)
                }
            }
            return false
        case .missing:
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, parent != path, !exists(parent) {
                try ensureDirectory(parent)
            }
            guard mkdir(path, 0o700) == 0 else {
                guard errno == EEXIST else { throw AccountdError.storage("creating folder", path: path, errno: errno) }
                return try ensureDirectory(path)
            }
            // mkdir applies the umask; make the mode exact.
            _ = chmod(path, 0o700)
            return true
        default:
            throw AccountdError(
                .storage, "\(path) exists but is not a folder (symlinks are not followed); move it aside",
                file: path)
        }
    }

    /// Creates a new empty 0600 file, failing if anything already exists there.
    static func createExclusive(_ path: String) throws {
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AccountdError.storage("creating", path: path, errno: errno) }
        fchmod(fd, 0o600)
        close(fd)
    }

    /// Flushes a file's data to stable storage.
    static func fsyncFile(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw AccountdError.storage("opening", path: path, errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw AccountdError.storage("fsync of", path: path, errno: errno) }
    }

    /// Flushes a folder, so that a rename or creation inside it survives power loss.
    static func fsyncDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw AccountdError.storage("opening folder", path: path, errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw AccountdError.storage("fsync of folder", path: path, errno: errno) }
    }

    /// Renames atomically and makes the rename durable.
    static func durableRename(_ from: String, to: String) throws {
        guard rename(from, to) == 0 else { throw AccountdError.storage("renaming \(from) to", path: to, errno: errno) }
        try fsyncDirectory((to as NSString).deletingLastPathComponent)
    }

    /// Puts the finished file `staged` in place at `path` durably, never replacing a file:
    /// fsyncs it, links it to `path`, removes the staged name and fsyncs the folder.
    ///
    /// A `-wal`, `-shm` or `-journal` at `path` while no file is there belongs to no file (a
    /// file removed by hand, a crash of someone else's tool), yet SQLite would take it for the
    /// new file's own and replay another database's pages onto it: it is removed first (names
    /// only: a link there is removed, not followed).
    ///
    /// - Returns: false, changing nothing, when `path` already exists.
    static func linkIntoPlace(_ staged: String, at path: String) throws -> Bool {
        try fsyncFile(staged)
        if entry(at: path) == .missing {
            for suffix in ["-wal", "-shm", "-journal"] { try removeIfPresent(path + suffix) }
        }
        // link() fails when the name exists: a file is never overwritten.
        guard link(staged, path) == 0 else {
            if errno == EEXIST { return false }
            throw AccountdError.storage("linking \(staged) to", path: path, errno: errno)
        }
        try removeIfPresent(staged)
        try fsyncDirectory((path as NSString).deletingLastPathComponent)
        return true
    }

    /// Removes a file; a missing file is not an error.
    static func removeIfPresent(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw AccountdError.storage("removing", path: path, errno: errno)
        }
    }

    /// Removes a SQLite file and what SQLite keeps beside it (`-wal`, `-shm`, `-journal`);
    /// missing files are not an error.
    static func removeWithCompanions(_ path: String) throws {
        for suffix in ["", "-wal", "-shm", "-journal"] { try removeIfPresent(path + suffix) }
    }

    /// Replaces `path` with `data` atomically: a reader sees the old bytes or the new, never a mix,
    /// even after power loss. The file is 0600.
    static func atomicWrite(_ data: Data, to path: String) throws {
        let temp = (path as NSString).deletingLastPathComponent + "/." + (path as NSString).lastPathComponent
            + ".tmp-\(getpid())-\(UUID().uuidString.prefix(8))"
        let fd = open(temp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AccountdError.storage("creating", path: temp, errno: errno) }
        var failure: Int32 = 0
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure == 0, fdatasync(fd) != 0 { failure = errno }
        close(fd)
        if failure != 0 {
            unlink(temp)
            throw AccountdError.storage("writing", path: temp, errno: failure)
        }
        guard rename(temp, path) == 0 else {
            // A failed write leaves no temporary file behind (each would hold a whole copy).
            let failure = errno
            unlink(temp)
            throw AccountdError.storage("renaming \(temp) to", path: path, errno: failure)
        }
        try fsyncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Removes the temporary files ``atomicWrite(_:to:)`` of `path` left behind (by a crash in
    /// the middle of a write, or by a version that kept them after a failed rename), and returns
    /// their names. Call it only when no write of `path` can run (at start, under the data
    /// root's lock).
    static func removeWriteLeftovers(of path: String) -> [String] {
        let folder = (path as NSString).deletingLastPathComponent
        let prefix = "." + (path as NSString).lastPathComponent + ".tmp-"
        return contents(of: folder).filter { $0.hasPrefix(prefix) && unlink(folder + "/" + $0) == 0 }.sorted()
    }

    /// The names in a folder, without `.` and `..`; empty when the folder is missing.
    static func contents(of path: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    }
}
