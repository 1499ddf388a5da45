import Foundation

/// The files another process holds locked against readers, as the kernel lists them
/// (`/proc/locks`), read once for a whole census.
///
/// A lock changes neither a file's size nor its modification time, so the stamps that let
/// `Status`, `List` and the metrics skip an unchanged file do not show it: without this, an
/// account another process took after the daemon last read it (`sqlite3` with
/// `PRAGMA locking_mode=EXCLUSIVE`, say) stayed `current` while every operation on it failed.
/// Only a write lock on SQLite's shared-lock range of the main file counts (SQLite's EXCLUSIVE
/// lock, which shuts readers out): a WAL-mode writer or reader elsewhere locks other bytes
/// and leaves the file readable. No file is opened here: closing a descriptor of an account
/// file would drop the POSIX locks this process's own connections hold on it.
public struct OtherProcessLocks: Sendable {
    /// The inodes of files with such a lock.
    let inodes: Set<UInt64>

    /// SQLite's shared-lock range in the main file (`SHARED_FIRST`, `SHARED_SIZE` in os_unix.c).
    static let sharedFirst: UInt64 = 0x4000_0002
    static let sharedSize: UInt64 = 510

    /// Reads `/proc/locks` now; none where it cannot be read.
    public static func read() -> OtherProcessLocks {
        guard let text = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return OtherProcessLocks(inodes: []) }
        return parse(text, ownPID: getpid())
    }

    /// The locks in `text`, in `/proc/locks`' format (`1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF`),
    /// leaving out those of `ownPID` and the waiters (`->`).
    static func parse(_ text: String, ownPID: Int32) -> OtherProcessLocks {
        var inodes: Set<UInt64> = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, fields[1] != "->", fields[3] == "WRITE", Int32(fields[4]) != ownPID,
                let inode = fields[5].split(separator: ":").last.flatMap({ UInt64($0) }),
                let start = UInt64(fields[6])
            else { continue }
            let end = fields[7] == "EOF" ? UInt64.max : UInt64(fields[7]) ?? UInt64.max
            if start < sharedFirst + sharedSize && end >= sharedFirst { inodes.insert(inode) }
        }
        return OtherProcessLocks(inodes: inodes)
    }

    /// Whether another process holds the file at `path` locked against readers.
    public func holds(_ path: String) -> Bool {
        guard !inodes.isEmpty, let stamp = FileStamp(path: path) else { return false }
        return inodes.contains(stamp.inode)
    }

    /// Whether another process holds the file with this stamp locked against readers.
    func holds(_ stamp: FileStamp?) -> Bool {
        guard let stamp else { return false }
        return inodes.contains(stamp.inode)
    }

    /// The process (its pid; -1 for an open-file-description lock, which names none) holding
    /// any lock, of any kind and range, on the file with device `device` and inode `inode`,
    /// other than this process; nil when none does or `/proc/locks` cannot be read.
    ///
    /// Every SQLite connection in WAL mode holds a read lock on its database file for as long
    /// as it is open, so a live database of another process shows here, whatever path reached it.
    public static func holder(device: UInt64, inode: UInt64) -> Int32? {
        guard let text = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return nil }
        return holder(in: text, device: device, inode: inode, ownPID: getpid())
    }

    /// ``holder(device:inode:)`` in `text`, in `/proc/locks`' format, where the file is
    /// `MAJOR:MINOR:INODE` (major and minor in hexadecimal).
    static func holder(in text: String, device: UInt64, inode: UInt64, ownPID: Int32) -> Int32? {
        // glibc's major() and minor() of a dev_t.
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
        let minor = (device & 0xff) | ((device >> 12) & ~0xff)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, fields[1] != "->", let pid = Int32(fields[4]), pid != ownPID else { continue }
            let file = fields[5].split(separator: ":")
            guard file.count == 3, UInt64(file[0], radix: 16) == major, UInt64(file[1], radix: 16) == minor, UInt64(file[2]) == inode else { continue }
            return pid
        }
        return nil
    }
}
