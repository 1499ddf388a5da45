/// The reply to `Keys`: the keys set in a namespace.
public struct KeysReply: ReplyModel {
    enum Key: String { case keys }

    public var keys: [String]

    public init(keys: [String]) { self.keys = keys }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        keys = try ReplyReader(parameters, model: "Keys").strings(Key.keys)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.keys, .array(keys.map { .string($0) }))
        return object.value
    }
}
