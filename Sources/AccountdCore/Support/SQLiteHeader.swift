/// The first 100 bytes of an SQLite database file, read without SQLite.
struct SQLiteHeader {
    static let size = 100
    let bytes: [UInt8]

    /// nil when `bytes` is short or lacks the magic string "SQLite format 3".
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= Self.size, bytes.starts(with: Array("SQLite format 3\0".utf8)) else { return nil }
        self.bytes = bytes
    }

    /// `PRAGMA user_version`: bytes 60-63, big-endian.
    var userVersion: Int {
        Int(Int32(bitPattern: UInt32(bytes[60]) << 24 | UInt32(bytes[61]) << 16 | UInt32(bytes[62]) << 8 | UInt32(bytes[63])))
    }

    /// Whether the file is in WAL mode: the file format's write and read versions (bytes 18 and 19) are 2.
    var isWAL: Bool { bytes[18] == 2 && bytes[19] == 2 }
}
