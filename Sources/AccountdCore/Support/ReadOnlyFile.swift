#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file opened for reading, without following a symlink, for reading its header or copying it.
///
/// SQLite guards a database with POSIX advisory locks, and closing any descriptor of a file
/// releases every such lock the process holds on it. A `ReadOnlyFile` of an account's file is
/// therefore opened before an SQLite connection to the file and closed after that connection
/// (``close()``, in a `defer` written before the connection's own): it never takes a lock
/// away from a connection that is still open.
final class ReadOnlyFile {
    let path: String
    private var descriptor: Int32

    /// - Throws: `storage` when the file cannot be opened.
    init(_ path: String) throws {
        self.path = path
        descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw AccountdError.storage("opening", path: path, errno: errno) }
    }

    deinit { close() }

    func close() {
        guard descriptor >= 0 else { return }
        _ = Glibc.close(descriptor)
        descriptor = -1
    }

    /// The first `count` bytes, or fewer if the file is shorter.
    func prefix(count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, 0) }
        guard got >= 0 else { throw AccountdError.storage("reading", path: path, errno: errno) }
        return Array(buffer.prefix(got))
    }

    /// Copies the whole file into a new 0600 file at `destination`, runs `amend` on the copy's
    /// descriptor, then fsyncs the copy. The kernel copies (`sendfile`), or, where it cannot,
    /// this process reads and writes 64 KiB at a time.
    ///
    /// - Throws: `storage` naming the file that failed; a copy left half-written is the caller's to remove.
    func copy(to destination: String, amend: (Int32) throws -> Void = { _ in }) throws {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw AccountdError.storage("reading the size of", path: path, errno: errno) }
        let output = open(destination, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw AccountdError.storage("creating", path: destination, errno: errno) }
        defer { _ = Glibc.close(output) }
        fchmod(output, 0o600)
        var offset: off_t = 0
        while offset < info.st_size {
            let sent = sendfile(output, descriptor, &offset, Int(info.st_size - offset))
            if sent > 0 { continue }
            if sent == 0 { break }
            if errno == EINTR { continue }
            guard errno == EINVAL || errno == ENOSYS else { throw AccountdError.storage("copying \(path) to", path: destination, errno: errno) }
            try copyByReading(to: output, destination: destination, from: offset)
            break
        }
        try amend(output)
        guard fsync(output) == 0 else { throw AccountdError.storage("fsync of", path: destination, errno: errno) }
    }

    private func copyByReading(to output: Int32, destination: String, from start: off_t) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var offset = start
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count < 0 {
                if errno == EINTR { continue }
                throw AccountdError.storage("reading", path: path, errno: errno)
            }
            if count == 0 { return }
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes { pwrite(output, $0.baseAddress! + written, count - written, offset + off_t(written)) }
                if step < 0 {
                    if errno == EINTR { continue }
                    throw AccountdError.storage("writing", path: destination, errno: errno)
                }
                written += step
            }
            offset += off_t(count)
        }
    }
}
