import AccountdProtocol
import Foundation
import Synchronization

/// One lock per account, so that only one operation runs on an account at a time.
///
/// Waiting is bounded: an operation that cannot get its account within the
/// timeout fails with `accountBusy` rather than queueing forever.
final class AccountLocks: Sendable {
    private let held = Mutex<Set<AccountName>>([])

    func withLock<T>(_ account: AccountName, timeout: Duration, _ body: () throws -> T) throws -> T {
        let deadline = ContinuousClock.now + timeout
        var delay = Duration.microseconds(200)
        while !held.withLock({ $0.insert(account).inserted }) {
            guard ContinuousClock.now < deadline else {
                throw AccountdError(
                    .accountBusy, "account \(account) is busy with another operation; try again later", account: account.rawValue)
            }
            Thread.sleep(forTimeInterval: Double(delay.components.attoseconds) / 1e18 + Double(delay.components.seconds))
            delay = min(delay * 2, .milliseconds(20))
        }
        defer { _ = held.withLock { $0.remove(account) } }
        return try body()
    }
}
