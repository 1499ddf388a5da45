/// A reply whose parameters do not have the shape its model expects.
///
/// It names the model and the key, so a client that meets a daemon of another version
/// says which field it could not read instead of failing somewhere later.
public struct ReplyDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The model being decoded, e.g. `SwitchResult`.
    public var model: String
    /// The key that is missing or mistyped (a dotted path for a nested one, e.g. `bundle.version`).
    public var key: String
    /// What the key should hold, e.g. `an integer`.
    public var expected: String
    /// The JSON type found instead, or nil when the key is missing.
    public var found: String?

    /// Creates the error for `key` of `model`.
    public init(model: String, key: String, expected: String, found: String?) {
        self.model = model
        self.key = key
        self.expected = expected
        self.found = found
    }

    public var description: String {
        if let found {
            return "the \(model) reply's '\(key)' is \(found == "null" ? "null" : "a \(found)"), expected \(expected); is the daemon another version?"
        }
        return "the \(model) reply has no '\(key)' (expected \(expected)); is the daemon another version?"
    }
}
