/// The reply to `Remove`: whether everything was erased, or which snapshot keeps the account.
public struct RemoveReply: ReplyModel {
    enum Key: String { case account, purged, snapshot }

    public var account: String
    /// True when the file, its snapshots and its other files were erased for good.
    public var purged: Bool
    /// The final `before-remove` snapshot; nil after a purge.
    public var snapshot: SnapshotEntry?

    public init(account: String, purged: Bool, snapshot: SnapshotEntry?) {
        self.account = account
        self.purged = purged
        self.snapshot = snapshot
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Remove")
        account = try reader.string(Key.account)
        purged = try reader.bool(Key.purged)
        snapshot = try reader.optionalObject(Key.snapshot, SnapshotEntry.init)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.purged, .bool(purged))
        object.addIfPresent(Key.snapshot, snapshot?.parameters)
        return object.value
    }
}
