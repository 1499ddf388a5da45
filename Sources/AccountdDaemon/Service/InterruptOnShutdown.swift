import AccountdCore
import Logging
import ServiceLifecycle

/// Stops the long SQLite work at SIGTERM: migrations running, a reload's bundle check, an
/// account being created (``SQLiteInterrupt/stopAll()``).
///
/// A migration is one transaction, so a stopped one rolls back whole: the file stays at its
/// old version with all its rows, and is migrated at its next open. Without this, a migration
/// that runs for hours (or never ends) would hold the shutdown, the socket already closed,
/// until systemd's `TimeoutStopSec` killed the daemon. The daemon lists this service after
/// the sockets, so that it hears of a shutdown first; it returns at once.
struct InterruptOnShutdown: Service {
    let board: MigrationBoard
    let logger: Logger

    func run() async throws {
        // Returns at a graceful shutdown, or throws when the group is cancelled: then too, stop.
        try? await gracefulShutdown()
        SQLiteInterrupt.stopAll()
        let running = board.migrations().count
        if running > 0 {
            logger.notice("shutting down: stopping \(running) running migration(s); each rolls back whole and runs again at its account's next open")
        }
    }
}

extension InterruptOnShutdown: CustomStringConvertible {
    var description: String { "InterruptOnShutdown" }
}
