import AccountdCore
import AccountdProtocol
import Synchronization

/// Which accounts are being opened or migrated right now, readable without waiting,
/// so that `Status` answers while a migration runs.
final class MigrationBoard: Sendable {
    private let running = Mutex<[AccountName: MigrationProgress?]>([:])

    func begin(_ account: AccountName) { running.withLock { $0[account] = .some(nil) } }
    func progress(_ account: AccountName, _ step: MigrationProgress) { running.withLock { $0[account] = step } }
    func end(_ account: AccountName) { _ = running.withLock { $0.removeValue(forKey: account) } }

    /// True once the account has started applying migration steps.
    func isMigrating(_ account: AccountName) -> Bool {
        running.withLock { ($0[account] ?? nil) != nil }
    }

    var anyMigrating: Bool { running.withLock { $0.values.contains { $0 != nil } } }
}
