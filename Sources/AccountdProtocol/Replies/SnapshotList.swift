/// The reply to `Snapshots`: an account's snapshots, oldest first.
public struct SnapshotList: ReplyModel {
    enum Key: String { case account, snapshots }

    public var account: String
    public var snapshots: [SnapshotEntry]

    public init(account: String, snapshots: [SnapshotEntry]) {
        self.account = account
        self.snapshots = snapshots
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Snapshots")
        account = try reader.string(Key.account)
        snapshots = try reader.array(Key.snapshots, SnapshotEntry.init)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.snapshots, .array(snapshots.map(\.parameters)))
        return object.value
    }
}
