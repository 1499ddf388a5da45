import Foundation
import Logging

/// The last step of a shutdown, bounded: the daemon exits once its connections have closed
/// and ``grace`` has passed, whatever the blocking pool's threads are doing then.
///
/// A statement is stopped (at `limits.queryTimeoutMs`, when its client goes, at SIGTERM) only
/// between SQLite's virtual machine steps; one call of an SQL function (an `instr()` over a
/// text of millions of characters) is one step, and may run for minutes. Waiting for it would
/// hold SIGTERM until systemd's `TimeoutStopSec` kills the daemon (hostile31 F-sigterm). Exiting
/// under it loses nothing: a `Query` only reads, and a write not yet committed is rolled back
/// by SQLite's journal at the file's next open; its client, still connected at the grace, was
/// answered `ShuttingDown` (``Connection``).
enum ShutdownDeadline {
    /// How long the pool may take to finish once serving has ended: the connections' closing grace.
    static let grace: Duration = .seconds(10)

    /// Runs `drain` (closing the preference tables, shutting the pool down) and returns when it
    /// has; or, once `grace` has passed first, logs why and ends the process with status 0.
    static func drain(within grace: Duration = Self.grace, logger: Logger, _ drain: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await drain()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: grace)
                return false
            }
            if await group.next() ?? true {
                group.cancelAll()
                return
            }
            // Here, inside the group: leaving it would wait for the drain.
            logger.notice(
                "accountd stopped without waiting for the blocking pool: \(grace) after serving ended, its threads are still inside long SQLite steps (one call of an SQL function is not interrupted inside itself); reads lose nothing, and an uncommitted write rolls back at its account's next open"
            )
            fflush(nil)
            _exit(0)
        }
    }
}
