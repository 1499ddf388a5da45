/// The reply of a method that answers with no facts: `Ping`, `Set`, `Delete`.
public struct EmptyReply: ReplyModel {
    public init() {}

    /// Accepts any object: a newer daemon may add keys.
    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        _ = try ReplyReader(parameters, model: "empty")
    }

    public var parameters: JSONValue { .object([]) }
}
