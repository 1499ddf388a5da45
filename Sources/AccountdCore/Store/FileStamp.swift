import Foundation

/// What identifies a file's content cheaply: device, inode, size, modification time and
/// status-change time (`st_ctim`).
///
/// A file whose stamp is unchanged since it passed SQLite's `quick_check` is not scanned
/// again on the next open, and what was read of it is remembered. Any write to the main
/// file (a checkpoint, a restore, a copy over it, a bit flipped in place) changes the stamp
/// and brings the read back: also one whose modification time was put back afterwards
/// (`touch -r`, `cp -p`, `rsync -a` of a same-size file), since setting the times sets the
/// status-change time to now, and nothing but the clock sets that one back.
struct FileStamp: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int64
    /// The status-change time, in nanoseconds since the epoch: set by every write, and by
    /// every change of the times, mode or owner.
    var changed: Int64

    /// The stamp of the file at `path` (not following a symlink), or nil if it is missing.
    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }

    /// Whether the file last changed at least `margin` before now (the system clock), so that
    /// a write racing the read that took this stamp would have changed it.
    ///
    /// The kernel stamps a file's times from a coarse clock (a few milliseconds): a write in
    /// the same tick as a read, right after it, may leave every field of the stamp as it was.
    /// A stamp taken while the file was that fresh is not trusted to describe what was read.
    func settled(margin: Duration = .seconds(1)) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanos = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
        let (seconds, attoseconds) = margin.components
        return nanos - changed >= seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
