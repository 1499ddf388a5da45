import AccountdCore
import AccountdProtocol
import Synchronization

/// The `Execute`s waiting for their account's writer, so that concurrent ones share one
/// transaction and one sync (group commit).
///
/// The first `Execute` of an account while none is being committed starts a drain; those
/// that arrive meanwhile queue here, and the drain takes them all (up to ``batchLimit``) into
/// its next transaction. An account with a queue is being drained; the drain ends when it
/// finds the queue empty.
final class ExecuteBatches: Sendable {
    /// The most `Execute`s one transaction takes.
    static let batchLimit = 64

    /// One waiting `Execute`: its work, and how its caller is answered.
    struct Waiter: Sendable {
        var work: SQLConnection.Batched
        var answer: @Sendable (Result<SQLConnection.Executed, any Error>) -> Void
    }

    private let queues = Mutex<[AccountName: [Waiter]]>([:])

    /// Queues `waiter`; returns true when no drain runs for the account, and the caller must start one.
    func add(_ waiter: Waiter, for account: AccountName) -> Bool {
        queues.withLock { queues in
            if queues[account] != nil {
                queues[account]!.append(waiter)
                return false
            }
            queues[account] = [waiter]
            return true
        }
    }

    /// The next batch of the account's drain; empty when none is waiting, which ends the drain.
    func next(for account: AccountName) -> [Waiter] {
        queues.withLock { queues in
            guard let waiting = queues[account], !waiting.isEmpty else {
                queues[account] = nil
                return []
            }
            let batch = Array(waiting.prefix(Self.batchLimit))
            queues[account] = Array(waiting.dropFirst(batch.count))
            return batch
        }
    }
}
