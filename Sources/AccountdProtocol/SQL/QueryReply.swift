/// A reply of `Query`.
///
/// Without `more`, one reply has every field. With `more`, the first reply has only
/// ``columns``, each following one (with `continues`) only ``rows``, and the last one only
/// ``rowCount`` and ``truncated``.
public struct QueryReply: ReplyModel {
    enum Key: String { case columns, rows, rowCount, truncated }

    /// The result's column names, in order.
    public var columns: [String]?
    /// Rows, each with one value per column.
    public var rows: [[SQLValue]]?
    /// How many rows were sent in all.
    public var rowCount: Int?
    /// Whether rows were left out because of `maxRows` or `limits.queryMaxRows`.
    public var truncated: Bool?

    public init(columns: [String]? = nil, rows: [[SQLValue]]? = nil, rowCount: Int? = nil, truncated: Bool? = nil) {
        self.columns = columns
        self.rows = rows
        self.rowCount = rowCount
        self.truncated = truncated
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Query")
        columns = reader.has(Key.columns) ? try reader.strings(Key.columns) : nil
        if let raw = reader.raw(Key.rows) {
            guard case .array(let items) = raw else {
                throw ReplyDecodingError(model: "Query", key: "rows", expected: "an array of rows", found: raw.typeName)
            }
            var rows: [[SQLValue]] = []
            rows.reserveCapacity(items.count)
            for item in items {
                guard case .array(let cells) = item else {
                    throw ReplyDecodingError(model: "Query", key: "rows", expected: "an array of rows", found: item.typeName)
                }
                var row: [SQLValue] = []
                row.reserveCapacity(cells.count)
                for cell in cells {
                    do { row.append(try SQLValue(json: cell, parameter: "rows")) } catch {
                        throw ReplyDecodingError(model: "Query", key: "rows", expected: "SQL values", found: cell.typeName)
                    }
                }
                rows.append(row)
            }
            self.rows = rows
        }
        rowCount = reader.has(Key.rowCount) ? try reader.int(Key.rowCount) : nil
        truncated = reader.has(Key.truncated) ? try reader.bool(Key.truncated) : nil
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.addIfPresent(Key.columns, columns.map { .array($0.map { .string($0) }) })
        object.addIfPresent(Key.rows, rows.map { .array($0.map { .array($0.map(\.json)) }) })
        object.addIfPresent(Key.rowCount, rowCount.map { JSONValue($0) })
        object.addIfPresent(Key.truncated, truncated.map { .bool($0) })
        return object.value
    }
}
