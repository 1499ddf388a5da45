import AccountdProtocol
import Synchronization

/// Which accounts are being opened right now, and which of those have started applying
/// migration steps, readable without waiting, so that `Status` answers while a
/// migration runs.
final class MigrationBoard: Sendable {
    /// An account being opened, and how many migration steps its migration has (0 until
    /// the first step starts).
    private let running = Mutex<[AccountName: Int]>([:])

    func begin(_ account: AccountName) { running.withLock { $0[account] = 0 } }
    /// A step of `steps` in all started.
    func stepStarted(_ account: AccountName, of steps: Int) { running.withLock { $0[account] = max(steps, 1) } }
    func end(_ account: AccountName) { _ = running.withLock { $0.removeValue(forKey: account) } }

    /// True once the account has started applying migration steps.
    func isMigrating(_ account: AccountName) -> Bool {
        running.withLock { ($0[account] ?? 0) > 0 }
    }

    /// How many steps the account's running migration has; 0 before its first step.
    func steps(_ account: AccountName) -> Int {
        running.withLock { $0[account] ?? 0 }
    }
}
