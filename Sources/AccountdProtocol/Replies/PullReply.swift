/// The reply to `Pull`: the account brought from the replica, at which version.
public struct PullReply: ReplyModel {
    enum Key: String { case account, version, sizeBytes, txid }

    public var account: String
    /// The schema version of the pulled file; the next switch opens or migrates it.
    public var version: Int
    /// The file's size in bytes.
    public var sizeBytes: Int64
    /// The Litestream transaction the copy was restored to, as Litestream prints it.
    public var txid: String?

    public init(account: String, version: Int, sizeBytes: Int64, txid: String?) {
        self.account = account
        self.version = version
        self.sizeBytes = sizeBytes
        self.txid = txid
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Pull")
        account = try reader.string(Key.account)
        version = try reader.int(Key.version)
        sizeBytes = try reader.int64(Key.sizeBytes)
        txid = try reader.optionalString(Key.txid)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.version, .int(Int64(version)))
        object.add(Key.sizeBytes, .int(sizeBytes))
        object.addIfPresent(Key.txid, txid.map { .string($0) })
        return object.value
    }
}
