/// The last reply of `Switch`: what was done to make the account active.
public struct SwitchResult: ReplyModel {
    enum Key: String { case account, previous, action, fromVersion, version, compatible, durationMs, path }

    /// The account now active.
    public var account: String
    /// The account active before, or nil.
    public var previous: String?
    /// `opened`, `created` or `migrated`.
    public var action: String
    /// The version before a migration, or nil.
    public var fromVersion: Int?
    /// The file's version now.
    public var version: Int
    /// Whether the file is newer than the bundle but declares itself readable by it.
    public var compatible: Bool
    /// How long the switch took, in milliseconds.
    public var durationMs: Double
    /// The account file's absolute path (`<data-root>/accounts/<account>.sqlite`), for an app
    /// that runs as the daemon's own user and opens the file itself (docs/APPS.md).
    public var path: String

    public init(
        account: String, previous: String?, action: String, fromVersion: Int?, version: Int, compatible: Bool, durationMs: Double, path: String
    ) {
        self.account = account
        self.previous = previous
        self.action = action
        self.fromVersion = fromVersion
        self.version = version
        self.compatible = compatible
        self.durationMs = durationMs
        self.path = path
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Switch")
        account = try reader.string(Key.account)
        previous = try reader.optionalString(Key.previous)
        action = try reader.string(Key.action)
        fromVersion = try reader.optionalInt(Key.fromVersion)
        version = try reader.int(Key.version)
        compatible = try reader.bool(Key.compatible)
        durationMs = try reader.double(Key.durationMs)
        path = try reader.string(Key.path)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.previous, JSONValue(previous))
        object.add(Key.action, .string(action))
        object.add(Key.fromVersion, JSONValue(fromVersion))
        object.add(Key.version, JSONValue(version))
        object.add(Key.compatible, .bool(compatible))
        object.add(Key.durationMs, .double(durationMs))
        object.add(Key.path, .string(path))
        return object.value
    }
}
