/// The reply to `Status` without an account: the active account and the daemon's state.
public struct DaemonStatus: ReplyModel {
    enum Key: String { case active, state, version, bundleVersion }

    /// The active account, or nil when none is.
    public var active: String?
    /// `ready`, `migrating` (the active account is being migrated) or `idle` (no active account).
    public var state: String
    /// The active account's schema version, or nil.
    public var version: Int?
    /// The bundle's target version.
    public var bundleVersion: Int

    public init(active: String?, state: String, version: Int?, bundleVersion: Int) {
        self.active = active
        self.state = state
        self.version = version
        self.bundleVersion = bundleVersion
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Status")
        active = try reader.optionalString(Key.active)
        state = try reader.string(Key.state)
        version = try reader.optionalInt(Key.version)
        bundleVersion = try reader.int(Key.bundleVersion)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.active, JSONValue(active))
        object.add(Key.state, .string(state))
        object.add(Key.version, JSONValue(version))
        object.add(Key.bundleVersion, JSONValue(bundleVersion))
        return object.value
    }
}
