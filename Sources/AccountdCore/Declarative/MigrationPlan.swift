import AccountdProtocol

/// What bringing one account to the bundle's target would do, as SQL: the reply to `Plan`.
///
/// For a declarative bundle the steps are computed from the file's own schema (see
/// ``DeclarativePlanner``); for a chain they are the pending migrations' text. Making a
/// plan changes nothing.
public struct MigrationPlan: Sendable {
    /// One step: SQL that runs as a unit, and whether it loses data.
    public struct Step: Sendable, Hashable {
        /// The statements. A lossy step begins with `-- lossy:` comment lines saying what it loses.
        public var sql: String
        /// Whether running the step loses rows or values.
        public var lossy: Bool { !losses.isEmpty }
        /// Each loss, in words: which object and how many rows.
        public var losses: [String]
        /// The losses the bundle does not accept with `-- accountd: allow-drop`.
        public var refused: [String]

        /// A table the step rebuilds, which must hold as many rows after the step as before:
        /// the migration fails when it does not (an `ON CONFLICT REPLACE` or `IGNORE` of the new
        /// table resolving rows that became equal under a new collation or type), so no row
        /// is ever deleted unseen.
        public var keepsRowsOf: String?

        init(_ sql: String, losses: [Loss] = [], keepsRowsOf: String? = nil) {
            self.keepsRowsOf = keepsRowsOf
            let marks = losses.map { "-- lossy: \($0.text)" + ($0.allowed ? " (allowed by allow-drop)" : "") + "\n" }.joined()
            self.sql = marks + sql
            self.losses = losses.map(\.text)
            self.refused = losses.filter { !$0.allowed }.map(\.text)
        }
    }

    /// Data a step would lose, and whether the bundle allows it.
    struct Loss: Sendable, Hashable {
        /// The object and the number of rows concerned, e.g. `table note: column body holds 3 non-NULL value(s)`.
        var text: String
        var allowed: Bool
    }

    public var account: AccountName
    /// The file's version now.
    public var fromVersion: Int
    /// The bundle's target version.
    public var version: Int
    public var steps: [Step]

    /// The losses the bundle does not allow: a migration with any of these is refused.
    public var refusals: [String] { steps.flatMap(\.refused) }

    /// SHA-256 over the steps' SQL: recorded in the account's history when the plan is applied.
    public var sha256: String { Digest.sha256Hex(steps.map(\.sql).joined(separator: "\n")) }
}
