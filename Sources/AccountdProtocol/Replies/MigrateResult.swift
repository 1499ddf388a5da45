/// One account's outcome in `Migrate`: a streamed reply with `more: true`, else an
/// entry of the summary's `results`.
public struct MigrateResult: ReplyModel {
    /// What happened to the account.
    public enum Outcome: Hashable, Sendable {
        /// `migrated`, `created`, `restored` (a rollback) or `current`, with the versions before and after.
        case done(result: String, fromVersion: Int?, version: Int)
        /// `failed`: the error's wire name and message. A failed account never stops the
        /// others, unless the rollout's `maxFailures` is reached.
        case failed(error: String, message: String?)
        /// `skipped`: not begun, because the rollout stopped (see ``MigrateRollout``).
        case skipped
    }

    enum Key: String { case account, result, fromVersion, version, error, message, interrupted, of }

    public var account: String
    public var outcome: Outcome
    /// For a `failed` account: true when its migration was interrupted (rolled back whole,
    /// every row kept) because a reload withdrew the bundle it ran under, not a failure of the
    /// account; sent only when true.
    public var interrupted = false
    /// How many accounts the Migrate works on: set in streamed replies, for progress.
    public var of: Int?

    public init(account: String, outcome: Outcome, of: Int? = nil) {
        self.account = account
        self.outcome = outcome
        self.of = of
    }

    /// `migrated`, `created`, `restored`, `current`, `failed` or `skipped`.
    public var result: String {
        switch outcome {
        case .done(let result, _, _): result
        case .failed: "failed"
        case .skipped: "skipped"
        }
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        try self.init(ReplyReader(parameters, model: "Migrate"))
    }

    init(_ reader: ReplyReader) throws(ReplyDecodingError) {
        account = try reader.string(Key.account)
        let result = try reader.string(Key.result)
        switch result {
        case "failed":
            outcome = .failed(error: try reader.optionalString(Key.error) ?? "", message: try reader.optionalString(Key.message))
            interrupted = try reader.optionalBool(Key.interrupted) ?? false
        case "skipped":
            outcome = .skipped
        default:
            outcome = .done(result: result, fromVersion: try reader.optionalInt(Key.fromVersion), version: try reader.int(Key.version))
        }
        of = try reader.optionalInt(Key.of)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.result, .string(result))
        switch outcome {
        case .done(_, let fromVersion, let version):
            object.add(Key.fromVersion, JSONValue(fromVersion))
            object.add(Key.version, JSONValue(version))
        case .failed(let error, let message):
            object.add(Key.error, .string(error))
            object.add(Key.message, JSONValue(message))
            if interrupted { object.add(Key.interrupted, .bool(true)) }
        case .skipped:
            break
        }
        object.addIfPresent(Key.of, of.map(JSONValue.init))
        return object.value
    }
}
