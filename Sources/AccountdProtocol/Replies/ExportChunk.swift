/// A streamed reply of an `sql` or `sqlite` export: a piece of the dump or of the file.
public enum ExportChunk: ReplyModel {
    /// SQL text of an `sql` export; the pieces joined are a script for `sqlite3`.
    case sql(String)
    /// Bytes of an `sqlite` export; on the wire, base64 text.
    case data([UInt8])

    enum Key: String { case sql, data }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Export chunk")
        if reader.has(Key.sql) {
            self = .sql(try reader.string(Key.sql))
            return
        }
        let text = try reader.string(Key.data)
        guard let bytes = Base64.decode(Array(text.utf8)[...]) else {
            throw ReplyDecodingError(model: "Export chunk", key: Key.data.rawValue, expected: "base64 text", found: "string")
        }
        self = .data(bytes)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        switch self {
        case .sql(let text): object.add(Key.sql, .string(text))
        case .data(let bytes): object.add(Key.data, .string(Base64.encode(bytes)))
        }
        return object.value
    }

    /// How an `sql` chunk reply's parameters begin, before the JSON string: `{"sql":`.
    public static let sqlPrefix = "{\"\(Key.sql.rawValue)\":"
    /// How an `sqlite` chunk reply's parameters begin, up to the base64 text: `{"data":"`.
    public static let dataPrefix = "{\"\(Key.data.rawValue)\":\""
}
