import AccountdProtocol

/// What ``AccountdClient/list(details:)`` returns: every account, and the daemon's count.
public struct AccountList: Sendable, Hashable {
    /// One entry per account, in the daemon's order (by name).
    public var entries: [ListEntry]
    /// The final reply: how many accounts the daemon listed.
    public var summary: ListSummary
}
