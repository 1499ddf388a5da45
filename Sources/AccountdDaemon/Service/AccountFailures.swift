import AccountdCore
import AccountdProtocol
import Synchronization

/// The accounts whose last attempt to be brought to the bundle failed, with the error's
/// short name, until an open of them succeeds: the metrics count them as `failed`.
///
/// Kept in memory: after a restart a failed account counts by its file again (`outdated`,
/// as the failed migration left it), and fails again at its next open. Each failure also
/// leaves a log line naming the account, the versions and the error (``ErrorMapping``),
/// since the metrics carry no account label.
final class AccountFailures: Sendable {
    private let failed = Mutex<[AccountName: String]>([:])

    /// `account` failed with `error` (a short error name, e.g. `MigrationFailed`).
    func failed(_ account: AccountName, error: String) { failed.withLock { $0[account] = error } }

    /// `account` opened: it no longer counts as failed.
    func succeeded(_ account: AccountName) { _ = failed.withLock { $0.removeValue(forKey: account) } }

    /// The failed accounts now.
    var accounts: Set<AccountName> { failed.withLock { Set($0.keys) } }
}
