import ServiceLifecycle

/// The daemon's sockets as one service, so that shutdown reaches them at the same moment.
///
/// `ServiceGroup` shuts its services down one at a time, the last first, waiting for each
/// to finish. Two servers as two services would let the second go on taking connections
/// while the first drained; as one, a graceful shutdown (SIGTERM) stops both accept loops
/// at once, and each lets its open connections finish the request they run (later ones get
/// `ShuttingDown`). The daemon lists this service last but one, so that it hears of a
/// shutdown second: only `InterruptOnShutdown`, which stops long SQLite work and returns at
/// once, comes before it; nothing else (the watchdog, reloads) stands between SIGTERM and it.
struct SocketServers: Service {
    let servers: [SocketServer]

    func run() async throws {
        // Child tasks inherit the group's graceful-shutdown signal: each server hears it.
        try await withThrowingDiscardingTaskGroup { group in
            for server in servers {
                group.addTask { try await server.run() }
            }
        }
    }
}

extension SocketServers: CustomStringConvertible {
    // ServiceLifecycle logs services by their description; never let it dump settings or the environment.
    var description: String { "SocketServers(" + servers.map(\.description).joined(separator: ", ") + ")" }
}
