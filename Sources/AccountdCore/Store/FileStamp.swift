import Foundation

/// What identifies a file's content cheaply: device, inode, size and modification time.
///
/// A file whose stamp is unchanged since it passed SQLite's `quick_check` is not scanned
/// again on the next open. Any write to the main file (a checkpoint, a restore, a copy
/// over it, a bit flipped in place) changes the stamp and brings the scan back.
struct FileStamp: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int64

    /// The stamp of the file at `path` (not following a symlink), or nil if it is missing.
    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }
}
