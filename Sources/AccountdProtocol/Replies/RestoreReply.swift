/// The reply to `Restore`: the snapshot put back, and the snapshot of the file it replaced.
public struct RestoreReply: ReplyModel {
    /// How the restored file was reopened, when the account is the active one.
    public struct Reopened: Hashable, Sendable {
        /// `opened` or `migrated`.
        public var action: String
        public var version: Int

        public init(action: String, version: Int) {
            self.action = action
            self.version = version
        }
    }

    enum Key: String { case account, restored, saved, action, version }

    public var account: String
    /// The snapshot restored; it is kept.
    public var restored: SnapshotEntry
    /// The snapshot taken of the replaced file, or nil when there was no file.
    public var saved: SnapshotEntry?
    /// Set when the account is active and was reopened; the keys are left out otherwise.
    public var reopened: Reopened?

    public init(account: String, restored: SnapshotEntry, saved: SnapshotEntry?, reopened: Reopened? = nil) {
        self.account = account
        self.restored = restored
        self.saved = saved
        self.reopened = reopened
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Restore")
        account = try reader.string(Key.account)
        restored = try reader.object(Key.restored, SnapshotEntry.init)
        saved = try reader.optionalObject(Key.saved, SnapshotEntry.init)
        reopened = reader.has(Key.action) ? Reopened(action: try reader.string(Key.action), version: try reader.int(Key.version)) : nil
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.restored, restored.parameters)
        object.add(Key.saved, saved?.parameters ?? .null)
        if let reopened {
            object.add(Key.action, .string(reopened.action))
            object.add(Key.version, JSONValue(reopened.version))
        }
        return object.value
    }
}
