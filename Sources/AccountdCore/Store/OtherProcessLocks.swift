import Foundation

#if canImport(Glibc)
    import Glibc
#endif

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

    /// This process's id, whose own locks do not count (asked once: `getpid` is a system call).
    static let ownPID = getpid()

    /// Reads `/proc/locks` now; none where it cannot be read.
    ///
    /// The file lists every lock on the machine (each SQLite reader elsewhere has some), and a
    /// `Status` of an account reads it each time: it is read and parsed as bytes, with no
    /// string or array made per line (as `String` and `split` it cost ten times the rest of
    /// the request with a hundred locks on the machine).
    public static func read() -> OtherProcessLocks {
        let fd = open("/proc/locks", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return OtherProcessLocks(inodes: []) }
        defer { close(fd) }
        var text: [UInt8] = []
        // Read through a buffer on the stack, never zeroed: only what `read` filled is copied.
        let complete = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16 * 1024) { chunk in
            while true {
                let count = Glibc.read(fd, chunk.baseAddress, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count < 0 { return false }
                if count == 0 { return true }
                text.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[..<count]))
            }
        }
        guard complete else { return OtherProcessLocks(inodes: []) }
        return text.withUnsafeBufferPointer { parse($0, ownPID: Self.ownPID) }
    }

    /// The locks in `text`, in `/proc/locks`' format (`1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF`),
    /// leaving out those of `ownPID` and the waiters (`->`).
    static func parse(_ text: String, ownPID: Int32) -> OtherProcessLocks {
        Array(text.utf8).withUnsafeBufferPointer { parse($0, ownPID: ownPID) }
    }

    /// The locks in the UTF-8 `text` of `/proc/locks` (see the `String` form).
    static func parse(_ text: UnsafeBufferPointer<UInt8>, ownPID: Int32) -> OtherProcessLocks {
        var inodes: Set<UInt64> = []
        var start = 0
        while start < text.count {
            var end = start
            while end < text.count && text[end] != UInt8(ascii: "\n") { end += 1 }
            if let inode = lockedInode(LockLine(text: text, position: start, end: end), ownPID: ownPID) { inodes.insert(inode) }
            start = end + 1
        }
        return OtherProcessLocks(inodes: inodes)
    }

    /// The inode of the line's lock when it is a write lock of another process, not waiting,
    /// on SQLite's shared-lock range; nil otherwise or when the line has fewer than eight fields.
    private static func lockedInode(_ line: LockLine, ownPID: Int32) -> UInt64? {
        var line = line
        guard line.field() != nil, let kind = line.field(), line.field() != nil, let access = line.field(), let pid = line.field(),
            let device = line.field(), let first = line.field(), let last = line.field()
        else { return nil }
        guard !line.is(kind, "->"), line.is(access, "WRITE"), line.integer(pid).flatMap({ Int32(exactly: $0) }) != ownPID,
            let inode = line.inode(device), let start = line.integer(first).flatMap({ UInt64(exactly: $0) })
        else { return nil }
        let end = line.is(last, "EOF") ? UInt64.max : line.integer(last).flatMap({ UInt64(exactly: $0) }) ?? UInt64.max
        return start < sharedFirst + sharedSize && end >= sharedFirst ? inode : nil
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
        return holder(in: text, device: device, inode: inode, ownPID: Self.ownPID)
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

/// One line of `/proc/locks`, read field by field (fields are separated by spaces).
private struct LockLine {
    let text: UnsafeBufferPointer<UInt8>
    var position: Int
    let end: Int

    /// The next field, or nil at the end of the line.
    mutating func field() -> Range<Int>? {
        while position < end && text[position] == UInt8(ascii: " ") { position += 1 }
        guard position < end else { return nil }
        let start = position
        while position < end && text[position] != UInt8(ascii: " ") { position += 1 }
        return start..<position
    }

    /// Whether `field` is exactly `word`.
    func `is`(_ field: Range<Int>, _ word: StaticString) -> Bool {
        guard field.count == word.utf8CodeUnitCount else { return false }
        for offset in 0..<field.count where text[field.lowerBound + offset] != word.utf8Start[offset] { return false }
        return true
    }

    /// `field` as a decimal number with an optional sign, as `Int64(_:)` reads it; nil if it is not one.
    func integer(_ field: Range<Int>) -> Int64? {
        var index = field.lowerBound
        var negative = false
        if index < field.upperBound, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
            negative = text[index] == UInt8(ascii: "-")
            index += 1
        }
        guard index < field.upperBound else { return nil }
        var value: Int64 = 0
        while index < field.upperBound {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = negative ? times.subtractingReportingOverflow(Int64(digit)) : times.addingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            index += 1
        }
        return value
    }

    /// The inode of a `MAJOR:MINOR:INODE` field: its last part that is not empty, as a number.
    func inode(_ field: Range<Int>) -> UInt64? {
        var last: Range<Int>?
        var start = field.lowerBound
        for index in field where text[index] == UInt8(ascii: ":") {
            if index > start { last = start..<index }
            start = index + 1
        }
        if start < field.upperBound { last = start..<field.upperBound }
        return last.flatMap { integer($0) }.flatMap { UInt64(exactly: $0) }
    }
}
