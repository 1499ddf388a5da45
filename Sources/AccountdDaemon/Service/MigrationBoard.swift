import AccountdProtocol
import Synchronization

/// Which accounts are being opened right now, and which of those have started applying
/// migration steps, readable without waiting, so that `Status` answers while a
/// migration runs.
final class MigrationBoard: Sendable {
    /// An account being opened, and whether it has started applying migration steps.
    private let running = Mutex<[AccountName: Bool]>([:])

    func begin(_ account: AccountName) { running.withLock { $0[account] = false } }
    func stepStarted(_ account: AccountName) { running.withLock { $0[account] = true } }
    func end(_ account: AccountName) { _ = running.withLock { $0.removeValue(forKey: account) } }

    /// True once the account has started applying migration steps.
    func isMigrating(_ account: AccountName) -> Bool {
        running.withLock { $0[account] == true }
    }
}
