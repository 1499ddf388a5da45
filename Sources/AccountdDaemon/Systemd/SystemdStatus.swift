import AccountdProtocol
import Synchronization

/// Keeps systemd's `STATUS=` line true, as a listener of the daemon's events.
///
/// Every status text the daemon sends is written here: ready, each migration step
/// (with more start-up time asked for, since a migration at start may be long), the
/// active account after a switch, reloading, stopping.
final class SystemdStatus: Sendable {
    private let active: @Sendable () -> AccountName?
    /// Whether `READY=1` was sent: before it, only migration steps are reported.
    private let serving = Atomic(false)
    /// What `READY=1` waits for: the sockets listen, and start-up's first attempt to open
    /// the saved active account ended (``DaemonEvent/startupSettled``).
    private let readiness = Mutex((listening: false, settled: false))

    /// - Parameter active: the active account now.
    init(active: @escaping @Sendable () -> AccountName?) {
        self.active = active
    }

    /// The line for a serving daemon.
    var servingLine: String {
        active().map { "serving; active account \($0)" } ?? "serving; no active account"
    }

    /// Handles one event (an ``EventHub`` listener).
    func handle(_ event: DaemonEvent) {
        switch event {
        case .watched(.migration(let step)):
            SystemdNotifier.notify("STATUS=migrating \(step.account) \(step.step)/\(step.of)")
            // A migration at start-up may be long: ask systemd for more time, a step at a time.
            SystemdNotifier.notify("EXTEND_TIMEOUT_USEC=120000000")
        case .watched(.switched), .openEnded:
            if serving.load(ordering: .acquiring) { SystemdNotifier.notify("STATUS=" + servingLine) }
        case .startupSettled:
            let now = readiness.withLock { state -> Bool in
                defer { state.settled = true }
                return state.listening && !state.settled
            }
            if now { sendReady() }
        case .watched:
            break
        }
    }

    /// The sockets accept connections: `READY=1` now, or once start-up's first attempt to
    /// open the saved active account ends (the daemon answers meanwhile, `Status` saying
    /// `opening`). Returns the status line.
    func ready() -> String {
        let now = readiness.withLock { state -> Bool in
            defer { state.listening = true }
            return state.settled && !state.listening
        }
        if now { sendReady() }
        return servingLine
    }

    private func sendReady() {
        serving.store(true, ordering: .releasing)
        SystemdNotifier.notify("READY=1\nSTATUS=" + servingLine)
    }

    /// A reload began (`RELOADING=1`).
    func reloading() { SystemdNotifier.notify("RELOADING=1\nSTATUS=reloading") }

    /// A reload ended, applied or refused.
    func reloaded() { SystemdNotifier.notify("READY=1\nSTATUS=" + servingLine) }

    /// Shutdown began.
    func stopping() {
        serving.store(false, ordering: .releasing)
        SystemdNotifier.notify("STOPPING=1\nSTATUS=shutting down")
    }
}
