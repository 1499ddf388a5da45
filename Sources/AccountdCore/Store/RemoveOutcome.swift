import AccountdProtocol

/// What ``AccountStore/remove(_:purge:holding:prepare:)`` did.
public struct RemoveOutcome: Sendable {
    /// The account removed.
    public var account: AccountName
    /// Whether everything of the account went (its file, every snapshot and every
    /// temporary file), rather than the file alone.
    public var purged: Bool
    /// The final `before-remove` snapshot; nil after a purge, or when the account had no file.
    public var snapshot: SnapshotInfo?
    /// How many snapshots a purge erased.
    public var snapshotsErased: Int
}
