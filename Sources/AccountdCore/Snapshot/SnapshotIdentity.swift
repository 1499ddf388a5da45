import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether two snapshots hold the same database: the same pages, byte for byte, apart from
/// the header fields that say how a copy was made rather than what it holds.
///
/// A retry of a failed migration snapshots a file that has not changed. Its copy may still
/// differ from the first one in page 1's header: a whole-file copy keeps the file's change
/// counter, schema cookie and SQLite version fields, while SQLite's backup API (used when the
/// WAL holds frames, as a rolled-back migration can leave it) writes its own. Those fields
/// are left out of the comparison; every other byte, every page, must match.
enum SnapshotIdentity {
    /// Header ranges a copy may change without changing the database: the file format's
    /// versions (18-19), the file change counter (24-27), the schema cookie (40-43), and the
    /// version-valid-for number and SQLite version (92-99).
    static let copyFields: [Range<Int>] = [18..<20, 24..<28, 40..<44, 92..<100]

    /// True when the files at `a` and `b` hold the same database; false when they differ or
    /// either cannot be read (a new snapshot is then taken, as without this check).
    static func sameDatabase(_ a: String, _ b: String) -> Bool {
        guard FileSystem.size(of: a) == FileSystem.size(of: b) else { return false }
        let (left, right) = (open(a, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), open(b, O_RDONLY | O_NOFOLLOW | O_CLOEXEC))
        defer {
            if left >= 0 { close(left) }
            if right >= 0 { close(right) }
        }
        guard left >= 0, right >= 0 else { return false }
        let chunk = 256 * 1024
        var (one, two) = ([UInt8](repeating: 0, count: chunk), [UInt8](repeating: 0, count: chunk))
        var offset = 0
        while true {
            let got = one.withUnsafeMutableBytes { read(left, $0.baseAddress, chunk) }
            guard got >= 0, fill(right, &two, count: got) else { return false }
            if got == 0 { return true }
            if offset == 0 {
                for range in copyFields where range.upperBound <= got {
                    for index in range { (one[index], two[index]) = (0, 0) }
                }
            }
            guard one[..<got] == two[..<got] else { return false }
            offset += got
        }
    }

    /// Reads exactly `count` bytes into `buffer`; false when the file ends first or a read fails.
    private static func fill(_ fd: Int32, _ buffer: inout [UInt8], count: Int) -> Bool {
        var done = 0
        while done < count {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, count - done) }
            guard got > 0 else { return false }
            done += got
        }
        return true
    }
}
