import AccountdProtocol

/// What ``AccountdClient/migrate(_:)`` yields: one result per account, then the summary.
public enum MigrateEvent: Sendable, Hashable {
    /// One account's outcome, in the order they finish.
    case account(MigrateResult)
    /// The counts; always the last element.
    case summary(MigrateSummary)
}

/// Which accounts ``AccountdClient/migrate(_:)`` works on.
public enum MigrateSelection: Sendable, Hashable {
    /// These accounts.
    case accounts([String])
    /// Every account under the data root.
    case all
}
