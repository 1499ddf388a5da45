/// An applied migration whose file in the bundle has changed since it was applied.
///
/// Part of the `Status {account}` and `Verify` replies.
public struct EditedMigrationInfo: Hashable, Sendable {
    enum Key: String { case version, name, appliedSha256, bundleSha256 }

    /// The migration's version.
    public var version: Int
    /// The migration's name, e.g. `0007_add_index`.
    public var name: String
    /// The sha256 recorded when it was applied.
    public var appliedSha256: String
    /// The sha256 of the bundle's file now.
    public var bundleSha256: String

    public init(version: Int, name: String, appliedSha256: String, bundleSha256: String) {
        self.version = version
        self.name = name
        self.appliedSha256 = appliedSha256
        self.bundleSha256 = bundleSha256
    }

    init(_ reader: ReplyReader) throws(ReplyDecodingError) {
        version = try reader.int(Key.version)
        name = try reader.string(Key.name)
        appliedSha256 = try reader.string(Key.appliedSha256)
        bundleSha256 = try reader.string(Key.bundleSha256)
    }

    /// The entry as it goes on the wire.
    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.version, JSONValue(version))
        object.add(Key.name, .string(name))
        object.add(Key.appliedSha256, .string(appliedSha256))
        object.add(Key.bundleSha256, .string(bundleSha256))
        return object.value
    }
}
