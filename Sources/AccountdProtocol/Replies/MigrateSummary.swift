/// The last reply of `Migrate`: the counts, why a rollout stopped, and without
/// `more: true` every account's result.
public struct MigrateSummary: ReplyModel {
    /// What stopped a staged rollout (see ``MigrateRollout``).
    public enum Stop: String, Sendable, Hashable {
        /// An account of the canary failed.
        case canary
        /// `maxFailures` accounts failed.
        case maxFailures
        /// A reload withdrew the bundle the rollout ran under (``MigrateSummary/withdrawnVersion``):
        /// its running migrations rolled back, and no further account began.
        case withdrawn
    }

    enum Key: String { case count, migrated, created, restored, current, failed, interrupted, skipped, stopped, results, withdrawnVersion, bundleVersion }

    /// How many accounts were asked for.
    public var count: Int
    public var migrated: Int
    /// Accounts created because they were missing (`create: true`); sent only when not 0.
    public var created: Int
    /// Accounts restored from their `before-migrate` snapshot (`rollbackTo`); sent only when not 0.
    public var restored: Int
    public var current: Int
    public var failed: Int
    /// Of the `failed`, the migrations a reload interrupted (rolled back whole) when it
    /// withdrew the bundle: not failures of the accounts. Sent only when not 0.
    public var interrupted = 0
    /// The accounts not begun because the rollout stopped.
    public var skipped: Int
    /// Why the rollout stopped early; nil when every account was begun.
    public var stopped: Stop?
    /// Every account's result when the request did not stream them; nil when it did.
    public var results: [MigrateResult]?
    /// With ``Stop/withdrawn``: the version of the bundle the rollout ran under, which a reload withdrew.
    public var withdrawnVersion: Int?
    /// With ``Stop/withdrawn``: the version of the bundle in force when the rollout ended.
    public var bundleVersion: Int?

    public init(
        count: Int, migrated: Int, current: Int, failed: Int, skipped: Int = 0, stopped: Stop? = nil, results: [MigrateResult]? = nil,
        created: Int = 0, restored: Int = 0
    ) {
        self.count = count
        self.migrated = migrated
        self.created = created
        self.restored = restored
        self.current = current
        self.failed = failed
        self.skipped = skipped
        self.stopped = stopped
        self.results = results
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Migrate")
        count = try reader.int(Key.count)
        migrated = try reader.int(Key.migrated)
        created = try reader.optionalInt(Key.created) ?? 0
        restored = try reader.optionalInt(Key.restored) ?? 0
        current = try reader.int(Key.current)
        failed = try reader.int(Key.failed)
        interrupted = try reader.optionalInt(Key.interrupted) ?? 0
        skipped = try reader.int(Key.skipped)
        if let stop = try reader.optionalString(Key.stopped) {
            guard let known = Stop(rawValue: stop) else {
                throw ReplyDecodingError(model: "Migrate", key: Key.stopped.rawValue, expected: "canary, maxFailures or withdrawn", found: stop)
            }
            stopped = known
        } else {
            stopped = nil
        }
        results = reader.has(Key.results) ? try reader.array(Key.results, MigrateResult.init) : nil
        withdrawnVersion = try reader.optionalInt(Key.withdrawnVersion)
        bundleVersion = try reader.optionalInt(Key.bundleVersion)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.count, JSONValue(count))
        object.add(Key.migrated, JSONValue(migrated))
        if created > 0 { object.add(Key.created, JSONValue(created)) }
        if restored > 0 { object.add(Key.restored, JSONValue(restored)) }
        object.add(Key.current, JSONValue(current))
        object.add(Key.failed, JSONValue(failed))
        if interrupted > 0 { object.add(Key.interrupted, JSONValue(interrupted)) }
        object.add(Key.skipped, JSONValue(skipped))
        object.addIfPresent(Key.stopped, stopped.map { .string($0.rawValue) })
        object.addIfPresent(Key.results, results.map { .array($0.map(\.parameters)) })
        object.addIfPresent(Key.withdrawnVersion, withdrawnVersion.map { JSONValue($0) })
        object.addIfPresent(Key.bundleVersion, bundleVersion.map { JSONValue($0) })
        return object.value
    }
}
