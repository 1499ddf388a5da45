#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The free space of the filesystem that holds a path, so that an error SQLite reports as
/// an I/O error can be told apart as a full disk.
enum DiskSpace {
    /// Below this many free bytes a filesystem counts as full: SQLite alone needs 32 KiB for a
    /// WAL index, and a page or two for any write.
    static let fullBelow: Int64 = 1 << 20

    /// The bytes an unprivileged process may still write on the filesystem holding `path`
    /// (a file or a folder), or nil when it cannot be asked.
    static func available(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Whether the filesystem holding `path` is full (or nearly), as far as can be told.
    static func isFull(at path: String) -> Bool {
        guard let free = available(at: path) else { return false }
        return free < fullBelow
    }
}
