import AccountdProtocol

/// What opening an account did, as one row of the decision table.
public struct OpenOutcome: Sendable, Hashable {
    /// What happened to the file.
    public enum Action: String, Sendable, Hashable {
        /// The file was missing and was created at the target version.
        case created
        /// The file was at the target version (or a compatible newer one) and was opened.
        case opened
        /// The file was older and was migrated to the target version.
        case migrated
    }

    public var account: AccountName
    public var action: Action
    /// The version before a migration; nil unless ``action`` is `migrated`.
    public var fromVersion: Int?
    /// The file's version now.
    public var version: Int
    /// True when the file is newer than the bundle but declares itself readable by it.
    public var compatible: Bool
    /// How a created account was built.
    public var creationMethod: SchemaBundle.CreationMethod?
    /// The snapshot taken before a migration.
    public var snapshot: SnapshotInfo?
    /// Applied migrations whose files changed since they were applied.
    public var editedMigrations: [EditedMigration]
    /// Wall time of the whole operation, in milliseconds.
    public var durationMs: Double
    /// Wall time of the migration transaction alone (no inspection, no snapshot), in milliseconds.
    public var migrationMs: Double?
    /// Wall time of the snapshot taken before a migration, in milliseconds.
    public var snapshotMs: Double?
}

/// An applied migration whose file in the bundle no longer matches what was applied.
public struct EditedMigration: Sendable, Hashable {
    public var version: Int
    public var name: String
    /// The sha256 recorded when the migration was applied.
    public var appliedSHA256: String
    /// The sha256 of the bundle's file now.
    public var bundleSHA256: String
}
