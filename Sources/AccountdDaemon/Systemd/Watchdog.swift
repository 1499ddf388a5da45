import CSystemd
import Logging
import ServiceLifecycle

/// Keeps systemd's watchdog fed while the daemon really serves.
///
/// Every half `WATCHDOG_USEC`, it runs a ``LivenessCheck``, which proves the event loops
/// and the store without connecting to the daemon's socket, and sends `WATCHDOG=1` only
/// when the check passes within a quarter of `WATCHDOG_USEC`. A daemon whose event loop is
/// stuck, or whose data root no longer answers, stops feeding the watchdog and systemd
/// restarts it; clients holding every connection slot (`limits.maxConnections`) or every
/// blocking thread do not. Active only when `sd_watchdog_enabled` says so, which checks
/// that `WATCHDOG_PID` is unset or ours. It stops at once on graceful shutdown, mid-sleep
/// or mid-check; until then it is fed while the requests in progress finish.
struct Watchdog: Service {
    let check: LivenessCheck
    let logger: Logger

    /// `WATCHDOG_USEC`, or nil when the watchdog is off (or meant for another process).
    static var timeout: Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec))
    }

    func run() async throws {
        defer { check.stop() }
        guard let timeout = Self.timeout else { return await neverReturn() }
        // Half the timeout between checks, as sd_watchdog_enabled(3) advises, and a quarter
        // for each check: a check that uses all of it still leaves a feed within the timeout.
        let interval = timeout / 2
        let deadline = timeout / 4
        logger.info("systemd watchdog on: checking the event loops and the store every \(interval)")
        // A graceful shutdown cancels the loop, its sleep included: the daemon never waits
        // for the next check to exit, however long WATCHDOG_USEC is.
        await cancelWhenGracefulShutdown { [check, logger] in
            var next = ContinuousClock.now
            while !Task.isCancelled {
                next += interval
                do { try await Task.sleep(until: next, clock: .continuous) } catch { return }
                let failure = await check.run(within: deadline)
                // A check cut short by the shutdown proves nothing either way.
                if Task.isCancelled { return }
                if let failure {
                    logger.error("watchdog: \(failure); not feeding the watchdog")
                } else {
                    SystemdNotifier.notify("WATCHDOG=1")
                }
                // After a long stall, start counting again from now rather than catching up.
                if next < .now - interval { next = .now }
            }
        }
    }

    private func neverReturn() async {
        // A service that returns early would end the group: wait for shutdown instead.
        try? await gracefulShutdown()
    }
}

extension Watchdog: CustomStringConvertible {
    // ServiceLifecycle logs services by their description; never let it dump settings or the environment.
    var description: String { "Watchdog" }
}
