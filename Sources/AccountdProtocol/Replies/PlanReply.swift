/// The reply to `Plan`: the SQL that would bring an account to the bundle's version.
///
/// Making a plan changes nothing. For a declarative bundle the steps are computed from
/// the file's own schema; for a chain they are the pending migrations' text.
public struct PlanReply: ReplyModel {
    enum Key: String { case account, fromVersion, version, steps }

    /// One step: SQL that runs as a unit.
    public struct Step: Sendable, Hashable {
        enum Key: String { case sql, lossy }

        public var sql: String
        /// Whether the step loses rows or values; its SQL then begins with `-- lossy:` lines saying what.
        public var lossy: Bool

        public init(sql: String, lossy: Bool) {
            self.sql = sql
            self.lossy = lossy
        }

        init(_ reader: ReplyReader) throws(ReplyDecodingError) {
            sql = try reader.string(Key.sql)
            lossy = try reader.bool(Key.lossy)
        }

        public var parameters: JSONValue {
            var object = ReplyObject()
            object.add(Key.sql, .string(sql))
            object.add(Key.lossy, .bool(lossy))
            return object.value
        }
    }

    public var account: String
    /// The file's version now.
    public var fromVersion: Int
    /// The bundle's version, which the plan reaches.
    public var version: Int
    /// The steps in order; empty when the file needs nothing.
    public var steps: [Step]

    public init(account: String, fromVersion: Int, version: Int, steps: [Step]) {
        self.account = account
        self.fromVersion = fromVersion
        self.version = version
        self.steps = steps
    }

    /// The plan as SQL a person reads, as `accountctl plan` and `accountd plan` print it: a
    /// header comment, then each step under a `-- step N` line, `LOSSY` on the lossy ones.
    public var script: String {
        var lines = ["-- account \(account): version \(fromVersion) to \(version), \(steps.count) step(s)"]
        if steps.isEmpty { lines.append("-- nothing to do: the file matches the bundle") }
        for (index, step) in steps.enumerated() {
            lines.append("")
            lines.append("-- step \(index + 1)\(step.lossy ? " LOSSY" : "")")
            lines.append(step.sql)
        }
        return lines.joined(separator: "\n")
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Plan")
        account = try reader.string(Key.account)
        fromVersion = try reader.int(Key.fromVersion)
        version = try reader.int(Key.version)
        steps = try reader.array(Key.steps, Step.init)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.fromVersion, JSONValue(fromVersion))
        object.add(Key.version, JSONValue(version))
        object.add(Key.steps, .array(steps.map(\.parameters)))
        return object.value
    }
}
