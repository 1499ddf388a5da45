import CSystemd
import Foundation
import Logging
import ServiceLifecycle

/// Keeps systemd's watchdog fed while the daemon really serves.
///
/// Every half `WATCHDOG_USEC`, it connects to the daemon's own socket and sends
/// `ping`; only when the reply comes back does it send `WATCHDOG=1`. A daemon whose
/// accept loop, event loop or dispatcher is stuck stops feeding the watchdog, and
/// systemd restarts it. Active only when `sd_watchdog_enabled` says so, which checks
/// that `WATCHDOG_PID` is unset or ours.
struct Watchdog: Service {
    let socketPath: @Sendable () -> String?
    let logger: Logger

    /// The keep-alive interval: half of `WATCHDOG_USEC`, or nil when the watchdog is off.
    static var interval: Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec / 2))
    }

    func run() async throws {
        guard let interval = Self.interval else { return await neverReturn() }
        logger.info("systemd watchdog on: proving the serving loop every \(interval)")
        while !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: interval)
            if Task.isShuttingDownGracefully { break }
            guard let path = socketPath() else { continue }
            let alive = await Task.detached { Self.ping(path, timeout: interval) }.value
            if alive {
                SystemdNotifier.notify("WATCHDOG=1")
            } else {
                logger.error("watchdog: the daemon did not answer its own ping on \(path); not feeding the watchdog")
            }
        }
    }

    private func neverReturn() async {
        // A service that returns early would end the group: wait for shutdown instead.
        try? await gracefulShutdown()
    }

    /// Connects to `path`, sends `ping`, and waits for one reply line.
    static func ping(_ path: String, timeout: Duration) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var tv = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        if tv.tv_sec == 0 && tv.tv_usec < 100_000 { tv.tv_usec = 100_000 }
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8.prefix($0.count - 1))) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { return false }
        let request = Array("ping\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 256)
        var received: [UInt8] = []
        while !received.contains(0x0A) {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return false }
            received += buffer[0..<count]
        }
        return received.starts(with: Array("{\"parameters\"".utf8))
    }
}

extension Watchdog: CustomStringConvertible {
    // ServiceLifecycle logs services by their description; never let it dump settings or the environment.
    var description: String { "Watchdog" }
}
