import AccountdProtocol

/// What ``AccountdClient/migrate(_:)`` yields: one result per account, then the summary.
public enum MigrateEvent: Sendable, Hashable {
    /// One account's outcome, in the order they finish.
    case account(MigrateResult)
    /// The counts; always the last element.
    case summary(MigrateSummary)
}

/// Which accounts ``AccountdClient/migrate(_:)`` works on: the client's form of
/// ``MigrateTarget``, with the names as strings.
public enum MigrateSelection: Sendable, Hashable {
    /// These accounts.
    case accounts([String])
    /// Every account under the data root.
    case all

    /// The target sent, with each name checked.
    ///
    /// - Throws: ``AccountdClientError/daemon(_:)`` with `InvalidAccountName` for the first
    ///   invalid name, as the daemon would reply.
    func target() throws(AccountdClientError) -> MigrateTarget {
        switch self {
        case .all: return .all
        case .accounts(let names):
            var accounts: [AccountName] = []
            for name in names { accounts.append(try AccountdClient.account(name)) }
            return .accounts(accounts)
        }
    }
}
