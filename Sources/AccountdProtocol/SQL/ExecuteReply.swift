/// The reply of `Execute`, sent once every statement is durably committed.
public struct ExecuteReply: ReplyModel {
    /// What one statement did.
    public struct Result: Hashable, Sendable {
        /// Rows the statement inserted, updated or deleted (`sqlite3_changes64`).
        public var changes: Int64
        /// The connection's last inserted rowid after the statement (`sqlite3_last_insert_rowid`).
        public var lastInsertRowid: Int64

        public init(changes: Int64, lastInsertRowid: Int64) {
            self.changes = changes
            self.lastInsertRowid = lastInsertRowid
        }
    }

    enum Key: String { case results, changes, lastInsertRowid }

    /// One result per statement, in order.
    public var results: [Result]

    public init(results: [Result]) { self.results = results }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        guard case .array(let items)? = parameters["results"] else {
            throw ReplyDecodingError(model: "Execute", key: "results", expected: "an array", found: parameters["results"]?.typeName)
        }
        var results: [Result] = []
        for item in items {
            let reader = try ReplyReader(item, model: "Execute", path: "results")
            results.append(Result(changes: try reader.int64(Key.changes), lastInsertRowid: try reader.int64(Key.lastInsertRowid)))
        }
        self.results = results
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(
            Key.results,
            .array(results.map { .object([(Key.changes.rawValue, .int($0.changes)), (Key.lastInsertRowid.rawValue, .int($0.lastInsertRowid))]) }))
        return object.value
    }
}
