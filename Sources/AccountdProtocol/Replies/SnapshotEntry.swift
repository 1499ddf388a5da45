/// One snapshot of an account: an entry of `Snapshots`, the reply of `Snapshot`, and
/// the `restored`, `saved` and `snapshot` objects of `Restore` and `Remove`.
public struct SnapshotEntry: ReplyModel {
    enum Key: String { case snapshot, version, createdAt, sizeBytes }

    /// The snapshot's name, `<timestamp>-v<version>-<label>`, as `Restore` takes it.
    public var snapshot: String
    /// The schema version of the copy.
    public var version: Int
    /// When it was taken, ISO 8601.
    public var createdAt: String
    public var sizeBytes: Int64

    public init(snapshot: String, version: Int, createdAt: String, sizeBytes: Int64) {
        self.snapshot = snapshot
        self.version = version
        self.createdAt = createdAt
        self.sizeBytes = sizeBytes
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        try self.init(ReplyReader(parameters, model: "Snapshot"))
    }

    init(_ reader: ReplyReader) throws(ReplyDecodingError) {
        snapshot = try reader.string(Key.snapshot)
        version = try reader.int(Key.version)
        createdAt = try reader.string(Key.createdAt)
        sizeBytes = try reader.int64(Key.sizeBytes)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.snapshot, .string(snapshot))
        object.add(Key.version, JSONValue(version))
        object.add(Key.createdAt, .string(createdAt))
        object.add(Key.sizeBytes, .int(sizeBytes))
        return object.value
    }
}
