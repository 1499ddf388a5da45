import AccountdProtocol

/// Something that happened in the daemon, as ``EventHub`` hands it out.
enum DaemonEvent: Sendable {
    /// What `Watch` clients see: a switch, a migration step, a failure, a preference change.
    case watched(WatchEvent)
    /// An account is done opening (created, opened or migrated), or failed to: a
    /// migration that was announced step by step is over. Not sent to watchers.
    case openEnded(AccountName)
    /// Start-up's first attempt to open the saved active account has ended (or there was
    /// none to open). Not sent to watchers.
    case startupSettled
}
