import AccountdProtocol

/// How an account's file relates to the bundle, without opening it for writing.
public struct AccountStatus: Sendable, Hashable {
    /// The account's state, as `Status` reports it.
    public enum State: String, Sendable, Hashable {
        case current, outdated, tooNew = "too_new", compatibleNewer = "compatible_newer", corrupt, missing, migrating
        /// The file cannot be read now for a reason that is not its own (a full or failing
        /// disk, permissions); ``AccountStatus/problem`` says which.
        case unavailable
    }

    public var account: AccountName
    public var exists: Bool
    /// The file's schema version; nil when missing or unreadable.
    public var version: Int?
    /// The bundle's target version.
    public var target: Int
    public var state: State
    /// The file plus its WAL, in bytes.
    public var sizeBytes: Int64
    public var createdAt: String?
    /// The newest applied migration.
    public var lastMigration: AppliedMigration?
    public var editedMigrations: [EditedMigration]
    /// Why the file is corrupt or unavailable, when it is.
    public var problem: String?

    public init(
        account: AccountName, exists: Bool, version: Int?, target: Int, state: State, sizeBytes: Int64, createdAt: String? = nil,
        lastMigration: AppliedMigration? = nil, editedMigrations: [EditedMigration] = [], problem: String? = nil
    ) {
        self.account = account
        self.exists = exists
        self.version = version
        self.target = target
        self.state = state
        self.sizeBytes = sizeBytes
        self.createdAt = createdAt
        self.lastMigration = lastMigration
        self.editedMigrations = editedMigrations
        self.problem = problem
    }
}

/// The result of a full verification of an account file.
public struct VerifyReport: Sendable, Hashable {
    public var account: AccountName
    /// `["ok"]`, or the problems `PRAGMA integrity_check` found.
    public var integrity: [String]
    /// Each foreign-key violation, in words; empty when there are none.
    public var foreignKeys: [String]
    /// Differences from the bundle's target schema; empty when the schema matches.
    /// For a file at another version, one line saying why it was not compared.
    public var schema: [String]
    /// Whether the schema was compared: only a file at the bundle's version is. A file at
    /// another version (outdated, or newer) is not called unhealthy for its schema.
    public var schemaCompared: Bool
    public var editedMigrations: [EditedMigration]
    /// False for a file newer than the bundle and not readable by it (`too_new`): such a file
    /// is not healthy for this bundle, whatever the other checks say.
    public var readableByBundle: Bool = true

    /// True when nothing is wrong.
    public var isHealthy: Bool {
        integrity == ["ok"] && foreignKeys.isEmpty && (schema.isEmpty || !schemaCompared) && editedMigrations.isEmpty
            && readableByBundle
    }
}
