/// The reply to `Import`: the account brought in from a file, at which version, with how many rows.
public struct ImportReply: ReplyModel {
    enum Key: String { case account, version, rows }

    public var account: String
    /// The schema version of the imported file; the next switch opens or migrates it.
    public var version: Int
    /// How many rows the account's own tables hold (every table but SQLite's, accountd's
    /// and Litestream's).
    public var rows: Int64

    public init(account: String, version: Int, rows: Int64) {
        self.account = account
        self.version = version
        self.rows = rows
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Import")
        account = try reader.string(Key.account)
        version = try reader.int(Key.version)
        rows = try reader.int64(Key.rows)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.version, .int(Int64(version)))
        object.add(Key.rows, .int(rows))
        return object.value
    }
}
