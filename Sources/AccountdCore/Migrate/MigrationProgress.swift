/// One step of a running migration, reported before the step runs.
public struct MigrationProgress: Sendable, Hashable {
    /// 1-based position of this step among the pending ones.
    public var step: Int
    /// How many steps are pending in all.
    public var of: Int
    /// The migration's name, e.g. `0003_add_sex`.
    public var name: String
    /// The version this step brings the account to.
    public var version: Int
}

/// Receives progress while an account migrates.
public typealias ProgressHandler = @Sendable (MigrationProgress) -> Void
