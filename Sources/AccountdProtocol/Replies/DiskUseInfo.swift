/// What an account takes on disk, part by part, as `List {details: true}` and
/// `Status {account}` reply it (flat keys beside the others).
public struct DiskUseInfo: Hashable, Sendable {
    enum Key: String { case fileBytes, walBytes, snapshotBytes, snapshots, litestreamBytes }

    /// The account file.
    public var fileBytes: Int64
    /// Its write-ahead log.
    public var walBytes: Int64
    /// Its snapshots, and how many there are.
    public var snapshotBytes: Int64
    public var snapshots: Int
    /// Litestream's local state for it (0 without replication).
    public var litestreamBytes: Int64

    public init(fileBytes: Int64, walBytes: Int64, snapshotBytes: Int64, snapshots: Int, litestreamBytes: Int64) {
        self.fileBytes = fileBytes
        self.walBytes = walBytes
        self.snapshotBytes = snapshotBytes
        self.snapshots = snapshots
        self.litestreamBytes = litestreamBytes
    }

    /// Reads the keys when the reply has them (a daemon that predates them sends none).
    init?(_ reader: ReplyReader) throws(ReplyDecodingError) {
        guard reader.has(Key.fileBytes) else { return nil }
        fileBytes = try reader.int64(Key.fileBytes)
        walBytes = try reader.int64(Key.walBytes)
        snapshotBytes = try reader.int64(Key.snapshotBytes)
        snapshots = try reader.int(Key.snapshots)
        litestreamBytes = try reader.int64(Key.litestreamBytes)
    }

    func add(to object: inout ReplyObject) {
        object.add(Key.fileBytes, .int(fileBytes))
        object.add(Key.walBytes, .int(walBytes))
        object.add(Key.snapshotBytes, .int(snapshotBytes))
        object.add(Key.snapshots, JSONValue(snapshots))
        object.add(Key.litestreamBytes, .int(litestreamBytes))
    }
}
