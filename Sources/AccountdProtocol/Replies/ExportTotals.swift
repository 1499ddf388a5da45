/// The last reply of `Export`: the format and what was sent, to check the export against.
public struct ExportTotals: ReplyModel {
    enum Key: String { case format, tables, rows, statements, sizeBytes, sha256 }

    /// `jsonl`, `sql` or `sqlite`.
    public var format: String
    /// `jsonl`: the rows sent per table.
    public var tables: [String: Int]?
    /// `jsonl`: the rows sent in all.
    public var rows: Int?
    /// `sql`: the statements sent.
    public var statements: Int?
    /// `sqlite`: the file's size.
    public var sizeBytes: Int64?
    /// `sqlite`: the file's sha256, lowercase hex.
    public var sha256: String?

    public init(
        format: String, tables: [String: Int]? = nil, rows: Int? = nil, statements: Int? = nil, sizeBytes: Int64? = nil,
        sha256: String? = nil
    ) {
        self.format = format
        self.tables = tables
        self.rows = rows
        self.statements = statements
        self.sizeBytes = sizeBytes
        self.sha256 = sha256
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Export")
        format = try reader.string(Key.format)
        if let raw = reader.raw(Key.tables) {
            guard case .object(let pairs) = raw else {
                throw ReplyDecodingError(model: "Export", key: Key.tables.rawValue, expected: "an object", found: raw.typeName)
            }
            var tables: [String: Int] = [:]
            for (name, count) in pairs {
                guard case .int(let number) = count else {
                    throw ReplyDecodingError(model: "Export", key: "\(Key.tables.rawValue).\(name)", expected: "an integer", found: count.typeName)
                }
                tables[name] = Int(number)
            }
            self.tables = tables
        }
        rows = try reader.optionalInt(Key.rows)
        statements = try reader.optionalInt(Key.statements)
        sizeBytes = try reader.optionalInt(Key.sizeBytes).map(Int64.init)
        sha256 = try reader.optionalString(Key.sha256)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.format, .string(format))
        object.addIfPresent(Key.tables, tables.map { .object($0.sorted { $0.key < $1.key }.map { ($0.key, JSONValue($0.value)) }) })
        object.addIfPresent(Key.rows, rows.map { JSONValue($0) })
        object.addIfPresent(Key.statements, statements.map { JSONValue($0) })
        object.addIfPresent(Key.sizeBytes, sizeBytes.map { .int($0) })
        object.addIfPresent(Key.sha256, sha256.map { .string($0) })
        return object.value
    }
}
