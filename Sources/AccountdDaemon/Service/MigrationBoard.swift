import AccountdProtocol
import Synchronization

/// Which accounts are being opened right now, and which of those have started applying
/// migration steps, readable without waiting, so that `Status` and the metrics answer
/// while a migration runs.
final class MigrationBoard: Sendable {
    /// An account being opened: how many migration steps its migration has (0 until the
    /// first step starts), and when its first step started.
    private struct Running: Sendable {
        var steps = 0
        var since = ContinuousClock.now
    }

    private let running = Mutex<[AccountName: Running]>([:])

    func begin(_ account: AccountName) { running.withLock { $0[account] = Running() } }
    /// A step of `steps` in all started.
    func stepStarted(_ account: AccountName, of steps: Int) {
        running.withLock { running in
            guard var entry = running[account] else { return }
            if entry.steps == 0 { entry.since = .now }
            entry.steps = max(steps, 1)
            running[account] = entry
        }
    }
    func end(_ account: AccountName) { _ = running.withLock { $0.removeValue(forKey: account) } }

    /// True while the account is being opened (a migration of it may not have started a step yet:
    /// it may be taking its snapshot or waiting for a lock).
    func isOpening(_ account: AccountName) -> Bool {
        running.withLock { $0[account] != nil }
    }

    /// True once the account has started applying migration steps.
    func isMigrating(_ account: AccountName) -> Bool {
        running.withLock { ($0[account]?.steps ?? 0) > 0 }
    }

    /// How many steps the account's running migration has; 0 before its first step.
    func steps(_ account: AccountName) -> Int {
        running.withLock { $0[account]?.steps ?? 0 }
    }

    /// The migrations running now (accounts that started a step), and how long the oldest
    /// has run since its first step started.
    func migrations() -> (count: Int, oldest: Duration?) {
        let now = ContinuousClock.now
        return running.withLock { running in
            let migrating = running.values.filter { $0.steps > 0 }
            return (migrating.count, migrating.map { now - $0.since }.max())
        }
    }
}
