/// The reply to `Restore`: the snapshot put back, the snapshot of the file it replaced,
/// and, for the active account, how the restored file was opened again.
public struct RestoreReply: ReplyModel {
    /// How the restored file was reopened, when the account is the active one.
    ///
    /// On the wire: `reopened` (`opened`, `migrated` or `failed`); `action` and `version`
    /// as a Switch has them when it succeeded; `version` (the version the restored file
    /// stays at) and `problem` (the error) when it failed.
    public struct Reopened: Hashable, Sendable {
        /// `opened`, `migrated` or `failed`.
        public var action: String
        /// The file's version after the reopen.
        public var version: Int
        /// Why the reopen failed; nil when it succeeded.
        public var problem: String?

        public init(action: String, version: Int, problem: String? = nil) {
            self.action = action
            self.version = version
            self.problem = problem
        }

        /// True when the restored file could not be brought to the bundle.
        public var failed: Bool { action == "failed" }
    }

    enum Key: String { case account, restored, saved, reopened, action, version, problem, restoredFrom, at }

    public var account: String
    /// The snapshot restored; it is kept.
    public var restored: SnapshotEntry
    /// The snapshot taken of the replaced file, or nil when there was no file.
    public var saved: SnapshotEntry?
    /// Set when the account is active and was reopened; the keys are left out otherwise.
    public var reopened: Reopened?
    /// `replica` for a restore from the Litestream replica (`Restore {at}`); nil for a snapshot.
    public var restoredFrom: String?
    /// For a restore from the replica: the time the restored state really has (RFC 3339), at
    /// or before the time asked for.
    public var at: String?

    public init(
        account: String, restored: SnapshotEntry, saved: SnapshotEntry?, reopened: Reopened? = nil, restoredFrom: String? = nil, at: String? = nil
    ) {
        self.account = account
        self.restored = restored
        self.saved = saved
        self.reopened = reopened
        self.restoredFrom = restoredFrom
        self.at = at
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Restore")
        account = try reader.string(Key.account)
        restored = try reader.object(Key.restored, SnapshotEntry.init)
        saved = try reader.optionalObject(Key.saved, SnapshotEntry.init)
        if let outcome = try reader.optionalString(Key.reopened) {
            reopened = Reopened(action: outcome, version: try reader.int(Key.version), problem: try reader.optionalString(Key.problem))
        } else if reader.has(Key.action) {
            // A daemon from before `reopened`.
            reopened = Reopened(action: try reader.string(Key.action), version: try reader.int(Key.version))
        } else {
            reopened = nil
        }
        restoredFrom = try reader.optionalString(Key.restoredFrom)
        at = try reader.optionalString(Key.at)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.restored, restored.parameters)
        object.add(Key.saved, saved?.parameters ?? .null)
        if let reopened {
            object.add(Key.reopened, .string(reopened.action))
            if !reopened.failed { object.add(Key.action, .string(reopened.action)) }
            object.add(Key.version, JSONValue(reopened.version))
            object.addIfPresent(Key.problem, reopened.problem.map { .string($0) })
        }
        object.addIfPresent(Key.restoredFrom, restoredFrom.map { .string($0) })
        object.addIfPresent(Key.at, at.map { .string($0) })
        return object.value
    }
}
