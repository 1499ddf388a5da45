/// The last reply of `Migrate`: the counts, and without `more: true` every account's result.
public struct MigrateSummary: ReplyModel {
    enum Key: String { case count, migrated, current, failed, results }

    /// How many accounts were asked for.
    public var count: Int
    public var migrated: Int
    public var current: Int
    public var failed: Int
    /// Every account's result when the request did not stream them; nil when it did.
    public var results: [MigrateResult]?

    public init(count: Int, migrated: Int, current: Int, failed: Int, results: [MigrateResult]? = nil) {
        self.count = count
        self.migrated = migrated
        self.current = current
        self.failed = failed
        self.results = results
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Migrate")
        count = try reader.int(Key.count)
        migrated = try reader.int(Key.migrated)
        current = try reader.int(Key.current)
        failed = try reader.int(Key.failed)
        results = reader.has(Key.results) ? try reader.array(Key.results, MigrateResult.init) : nil
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.count, JSONValue(count))
        object.add(Key.migrated, JSONValue(migrated))
        object.add(Key.current, JSONValue(current))
        object.add(Key.failed, JSONValue(failed))
        object.addIfPresent(Key.results, results.map { .array($0.map(\.parameters)) })
        return object.value
    }
}
