import CSQLiteConfig

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file opened for reading, not through a symbolic link, for reading its header or copying it.
///
/// SQLite guards a database with POSIX advisory locks, and closing *any* descriptor of a file
/// releases every such lock the process holds on it: a plain `open` and `close` of an account's
/// file would take the shared lock away from every connection the daemon has open to it, and
/// another process (an operator's `sqlite3`) could then checkpoint and delete the WAL under
/// them, losing what they write next. So a `ReadOnlyFile` opens the file through SQLite's own
/// file layer (the default VFS, as a main database file): SQLite counts it with the
/// connections to the same file, and when it is closed while any of them holds a lock, SQLite
/// keeps its descriptor open until the last of them closes, as it does for its own connections.
final class ReadOnlyFile {
    let path: String
    private let vfs: UnsafeMutablePointer<sqlite3_vfs>
    /// The VFS's file object (`szOsFile` bytes); nil once closed.
    private var file: UnsafeMutablePointer<sqlite3_file>?
    /// The name handed to the VFS, which keeps a pointer to it until the file is closed.
    private let name: UnsafeMutablePointer<CChar>

    /// - Throws: `storage` when the file cannot be opened, or is a symbolic link.
    init(_ path: String) throws {
        self.path = path
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
            throw AccountdError.storage("opening", path: path, errno: ELOOP)
        }
        guard let vfs = sqlite3_vfs_find(nil), let open = vfs.pointee.xOpen else {
            throw AccountdError(.storage, "opening \(path) failed: SQLite has no default file layer", file: path)
        }
        self.vfs = vfs
        // SQLite reads URI parameters after a main database's name, so it ends in several NULs.
        let bytes = Array(path.utf8CString) + [0, 0, 0]
        name = .allocate(capacity: bytes.count)
        name.initialize(from: bytes, count: bytes.count)
        let size = Int(vfs.pointee.szOsFile)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        let opened = raw.assumingMemoryBound(to: sqlite3_file.self)
        var flags: Int32 = 0
        errno = 0
        let result = open(vfs, name, opened, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB, &flags)
        let code = errno
        guard result == SQLITE_OK else {
            // A failed open leaves nothing to close (pMethods is nil).
            raw.deallocate()
            name.deallocate()
            throw AccountdError.storage("opening", path: path, errno: code == 0 ? EIO : code)
        }
        file = opened
    }

    deinit {
        close()
        name.deallocate()
    }

    /// Closes the file; SQLite keeps the descriptor while a connection of this process holds a lock on it.
    func close() {
        guard let file else { return }
        if let methods = file.pointee.pMethods, let close = methods.pointee.xClose { _ = close(file) }
        UnsafeMutableRawPointer(file).deallocate()
        self.file = nil
    }

    /// The file's size in bytes.
    func size() throws -> Int {
        guard let file, let fileSize = file.pointee.pMethods?.pointee.xFileSize else {
            throw AccountdError(.storage, "reading the size of \(path) failed: the file is closed", file: path)
        }
        var size: sqlite3_int64 = 0
        guard fileSize(file, &size) == SQLITE_OK else { throw AccountdError.storage("reading the size of", path: path, errno: errno) }
        return Int(size)
    }

    /// The first `count` bytes, or fewer if the file is shorter.
    func prefix(count: Int) throws -> [UInt8] {
        let wanted = min(count, try size())
        var buffer = [UInt8](repeating: 0, count: wanted)
        try read(into: &buffer, count: wanted, at: 0)
        return buffer
    }

    /// Copies the whole file into a new 0600 file at `destination`, runs `amend` on the copy's
    /// descriptor, then fsyncs the copy, reading 1 MiB at a time.
    ///
    /// - Throws: `storage` naming the file that failed; a copy left half-written is the caller's to remove.
    func copy(to destination: String, amend: (Int32) throws -> Void = { _ in }) throws {
        let total = try size()
        let output = open(destination, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw AccountdError.storage("creating", path: destination, errno: errno) }
        defer { _ = Glibc.close(output) }
        fchmod(output, 0o600)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset = 0
        while offset < total {
            let count = min(buffer.count, total - offset)
            try read(into: &buffer, count: count, at: offset)
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes { pwrite(output, $0.baseAddress! + written, count - written, off_t(offset + written)) }
                if step < 0 {
                    if errno == EINTR { continue }
                    throw AccountdError.storage("writing", path: destination, errno: errno)
                }
                written += step
            }
            offset += count
        }
        try amend(output)
        guard fsync(output) == 0 else { throw AccountdError.storage("fsync of", path: destination, errno: errno) }
    }

    /// Reads `count` bytes at `offset`, all of which the file holds.
    private func read(into buffer: inout [UInt8], count: Int, at offset: Int) throws {
        guard count > 0 else { return }
        guard let file, let read = file.pointee.pMethods?.pointee.xRead else {
            throw AccountdError(.storage, "reading \(path) failed: the file is closed", file: path)
        }
        let result = buffer.withUnsafeMutableBytes { read(file, $0.baseAddress, Int32(count), sqlite3_int64(offset)) }
        guard result == SQLITE_OK else {
            // SQLITE_IOERR_SHORT_READ: the file shrank since its size was read.
            throw AccountdError(
                .storage, "reading \(count) bytes at offset \(offset) of \(path) failed (SQLite I/O result \(result))", file: path)
        }
    }
}
