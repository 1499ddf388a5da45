/// The reply to `Get`: one preference's value.
public struct PreferenceValue: ReplyModel {
    enum Key: String { case value }

    /// The value, any JSON.
    public var value: JSONValue

    public init(value: JSONValue) { self.value = value }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Get")
        guard let value = reader.raw(Key.value) else {
            throw ReplyDecodingError(model: "Get", key: Key.value.rawValue, expected: "a JSON value", found: nil)
        }
        self.value = value
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.value, value)
        return object.value
    }
}
