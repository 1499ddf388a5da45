/// A streamed reply of a `jsonl` export: one row of one table.
public struct ExportRow: ReplyModel {
    enum Key: String { case table, row }

    /// The table's name.
    public var table: String
    /// The row, `{column: value}`; a blob is `{"$base64": "..."}`.
    public var row: JSONValue

    public init(table: String, row: JSONValue) {
        self.table = table
        self.row = row
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Export row")
        table = try reader.string(Key.table)
        guard case .object? = reader.raw(Key.row) else {
            throw ReplyDecodingError(model: "Export row", key: Key.row.rawValue, expected: "an object", found: reader.raw(Key.row)?.typeName)
        }
        row = reader.raw(Key.row) ?? .null
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.table, .string(table))
        object.add(Key.row, row)
        return object.value
    }

    /// Whether `parameters` are a row's (they name a table), rather than a chunk's or the totals.
    public static func isRow(_ parameters: JSONValue) -> Bool {
        parameters[Key.table.rawValue] != nil
    }

    /// How every row reply's parameters begin, `{"table":`; the daemon writes rows as
    /// bytes with this prefix, and clients recognise them by it without parsing.
    public static let parametersPrefix = "{\"\(Key.table.rawValue)\":"

    /// What comes between the table's name and the row object: `,"row":`.
    public static let rowSeparator = ",\"\(Key.row.rawValue)\":"
}
