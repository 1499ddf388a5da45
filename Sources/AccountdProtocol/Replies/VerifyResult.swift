/// The reply to `Verify`: a full check of one account file.
public struct VerifyResult: ReplyModel {
    enum Key: String { case account, healthy, integrity, foreignKeys, schema, schemaCompared, editedMigrations }

    public var account: String
    /// True when every check passed.
    public var healthy: Bool
    /// SQLite's integrity check, `ok` when it passed (problems joined with `; `).
    public var integrity: String
    /// Foreign-key violations.
    public var foreignKeys: [String]
    /// Differences between the file's schema and the bundle's; when ``schemaCompared`` is
    /// false, one line saying why the schema was not compared.
    public var schema: [String]
    /// False for a file at another version than the bundle's: its schema was not compared,
    /// and does not count against `healthy`. True when a daemon leaves the key out.
    public var schemaCompared: Bool
    /// Applied migrations whose bundle file has changed since.
    public var editedMigrations: [EditedMigrationInfo]

    public init(
        account: String, healthy: Bool, integrity: String, foreignKeys: [String], schema: [String], schemaCompared: Bool = true,
        editedMigrations: [EditedMigrationInfo]
    ) {
        self.account = account
        self.healthy = healthy
        self.integrity = integrity
        self.foreignKeys = foreignKeys
        self.schema = schema
        self.schemaCompared = schemaCompared
        self.editedMigrations = editedMigrations
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Verify")
        account = try reader.string(Key.account)
        healthy = try reader.bool(Key.healthy)
        integrity = try reader.string(Key.integrity)
        foreignKeys = try reader.strings(Key.foreignKeys)
        schema = try reader.strings(Key.schema)
        schemaCompared = reader.has(Key.schemaCompared) ? try reader.bool(Key.schemaCompared) : true
        editedMigrations = try reader.array(Key.editedMigrations, EditedMigrationInfo.init)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.healthy, .bool(healthy))
        object.add(Key.integrity, .string(integrity))
        object.add(Key.foreignKeys, .array(foreignKeys.map { .string($0) }))
        object.add(Key.schema, .array(schema.map { .string($0) }))
        object.add(Key.schemaCompared, .bool(schemaCompared))
        object.add(Key.editedMigrations, .array(editedMigrations.map(\.parameters)))
        return object.value
    }
}
