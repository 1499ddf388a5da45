/// The reply to `Status {account}`: one account's file, version and state.
public struct AccountStatusReply: ReplyModel {
    /// The newest migration applied to the file.
    public struct LastMigration: Hashable, Sendable {
        public var version: Int
        public var name: String
        /// When it was applied, ISO 8601.
        public var appliedAt: String

        public init(version: Int, name: String, appliedAt: String) {
            self.version = version
            self.name = name
            self.appliedAt = appliedAt
        }
    }

    enum Key: String {
        case account, exists, version, target, state, sizeBytes, createdAt, lastMigration, editedMigrations, problem
        case name, appliedAt
    }

    public var account: String
    /// Whether the account's file exists.
    public var exists: Bool
    /// The file's schema version, or nil when unknown (missing, corrupt, migrating).
    public var version: Int?
    /// The bundle's target version.
    public var target: Int
    /// `current`, `outdated`, `too_new`, `compatible_newer`, `corrupt`, `missing`, `migrating`,
    /// or `unavailable` (the file cannot be read now for the disk's sake: full or failing).
    public var state: String
    /// The file's size, its WAL included.
    public var sizeBytes: Int64
    /// When the file was created, ISO 8601, or nil.
    public var createdAt: String?
    /// The newest applied migration, or nil.
    public var lastMigration: LastMigration?
    /// Applied migrations whose bundle file has changed since.
    public var editedMigrations: [EditedMigrationInfo]
    /// What is wrong with the file, for a corrupt or unavailable one; the key is left out otherwise.
    public var problem: String?
    /// The disk the account takes, part by part; nil from a daemon that predates it.
    public var disk: DiskUseInfo?

    public init(
        account: String, exists: Bool, version: Int?, target: Int, state: String, sizeBytes: Int64, createdAt: String?,
        lastMigration: LastMigration?, editedMigrations: [EditedMigrationInfo], problem: String? = nil, disk: DiskUseInfo? = nil
    ) {
        self.disk = disk
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

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Status")
        account = try reader.string(Key.account)
        exists = try reader.bool(Key.exists)
        version = try reader.optionalInt(Key.version)
        target = try reader.int(Key.target)
        state = try reader.string(Key.state)
        sizeBytes = try reader.int64(Key.sizeBytes)
        createdAt = try reader.optionalString(Key.createdAt)
        lastMigration = try reader.optionalObject(Key.lastMigration) { nested throws(ReplyDecodingError) in
            LastMigration(version: try nested.int(Key.version), name: try nested.string(Key.name), appliedAt: try nested.string(Key.appliedAt))
        }
        editedMigrations = try reader.array(Key.editedMigrations, EditedMigrationInfo.init)
        problem = try reader.optionalString(Key.problem)
        disk = try DiskUseInfo(reader)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.exists, .bool(exists))
        object.add(Key.version, JSONValue(version))
        object.add(Key.target, JSONValue(target))
        object.add(Key.state, .string(state))
        object.add(Key.sizeBytes, .int(sizeBytes))
        object.add(Key.createdAt, JSONValue(createdAt))
        if let lastMigration {
            var nested = ReplyObject()
            nested.add(Key.version, JSONValue(lastMigration.version))
            nested.add(Key.name, .string(lastMigration.name))
            nested.add(Key.appliedAt, .string(lastMigration.appliedAt))
            object.add(Key.lastMigration, nested.value)
        } else {
            object.add(Key.lastMigration, .null)
        }
        object.add(Key.editedMigrations, .array(editedMigrations.map(\.parameters)))
        object.addIfPresent(Key.problem, problem.map { .string($0) })
        disk?.add(to: &object)
        return object.value
    }
}
