/// The reply to `Remove`: whether everything was erased, or which snapshot keeps the account.
public struct RemoveReply: ReplyModel {
    enum Key: String { case account, purged, snapshot, handoff }

    public var account: String
    /// True when the file, its snapshots and its other files were erased for good.
    public var purged: Bool
    /// The final `before-remove` snapshot; nil after a purge.
    public var snapshot: SnapshotEntry?
    /// True after a handoff (`Remove {handoff: true}`): the replica has the account's last
    /// state and this host refuses the account until it is pulled back.
    public var handoff: Bool

    public init(account: String, purged: Bool, snapshot: SnapshotEntry?, handoff: Bool = false) {
        self.account = account
        self.purged = purged
        self.snapshot = snapshot
        self.handoff = handoff
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Remove")
        account = try reader.string(Key.account)
        purged = try reader.bool(Key.purged)
        snapshot = try reader.optionalObject(Key.snapshot, SnapshotEntry.init)
        handoff = reader.has(Key.handoff) ? try reader.bool(Key.handoff) : false
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.purged, .bool(purged))
        object.addIfPresent(Key.snapshot, snapshot?.parameters)
        if handoff { object.add(Key.handoff, .bool(true)) }
        return object.value
    }
}
