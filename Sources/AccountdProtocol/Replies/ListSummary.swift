/// The last reply of `List`: how many accounts were listed.
public struct ListSummary: ReplyModel {
    enum Key: String { case count }

    public var count: Int

    public init(count: Int) { self.count = count }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        count = try ReplyReader(parameters, model: "List").int(Key.count)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.count, JSONValue(count))
        return object.value
    }
}
