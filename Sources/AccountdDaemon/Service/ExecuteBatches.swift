import AccountdCore
import AccountdProtocol
import Synchronization

/// The `Execute`s waiting for their account's writer, so that concurrent ones share one
/// transaction and one sync (group commit).
///
/// The first `Execute` of an account while none is being committed leads: it commits a batch
/// in its own request's task. Those that arrive meanwhile queue here; the leader takes them
/// all (up to ``batchLimit``, itself first) into its transaction, answers them, and hands the
/// lead to the first that still waits, whose task commits the next batch. An account with a
/// queue has a leader; the queue goes when a leader finds it empty. No task is ever started
/// for a batch: each runs in the task of a request it answers.
final class ExecuteBatches: Sendable {
    /// The most `Execute`s one transaction takes.
    static let batchLimit = 64

    /// What a waiting `Execute` is told.
    enum Turn: Sendable {
        /// Its batch was committed (or failed): its outcome.
        case answered(Result<SQLConnection.Executed, any Error>)
        /// It leads the next batch: its task commits it (``take(for:)``).
        case lead
    }

    /// One waiting `Execute`: its work, its caller's uid, and how its caller is told.
    struct Waiter: Sendable {
        var work: SQLConnection.Batched
        var uid: UInt32
        /// Asks the grants in force whether its caller may still write (throws if not).
        var allowed: @Sendable () throws -> Void = {}
        var resume: @Sendable (Turn) -> Void
    }

    private let queues = Mutex<[AccountName: [Waiter]]>([:])

    /// Queues `waiter`; returns true when no other leads the account's batches, and the caller leads.
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

    /// The leader's batch: the first ``batchLimit`` waiting, the leader first. Never empty
    /// for a leader (it is queued until it takes its batch).
    func take(for account: AccountName) -> [Waiter] {
        queues.withLock { queues in
            let waiting = queues[account] ?? []
            let batch = Array(waiting.prefix(Self.batchLimit))
            queues[account] = Array(waiting.dropFirst(batch.count))
            return batch
        }
    }

    /// After a batch: the next leader, the first still waiting (left queued, to take its
    /// batch), or nil when none waits and the account's queue goes.
    func handOver(for account: AccountName) -> Waiter? {
        queues.withLock { queues in
            guard let first = queues[account]?.first else {
                queues[account] = nil
                return nil
            }
            return first
        }
    }
}
