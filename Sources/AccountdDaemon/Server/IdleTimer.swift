import NIOCore

/// Tells a connection each time nothing was read from it or written to it for
/// `limits.idleTimeoutSeconds`.
///
/// Reads and writes only note the time (``touch()``). One timer, set for the timeout after
/// the last activity it knows of, looks when it goes off and sets itself again for the
/// timeout after the last activity if there was any since: a busy connection costs no
/// timer work per request, and an idle one is told when its whole timeout has passed.
///
/// Used on the connection's event loop only, on that loop's clock; ``stop()`` ends it and
/// lets go of `onIdle`.
final class IdleTimer {
    private let timeout: TimeAmount
    private let loop: EventLoop
    private var onIdle: (() -> Void)?
    private var lastActivity: NIODeadline
    private var check: Scheduled<Void>?

    /// Starts the timer on `loop`; `onIdle` is called once per timeout without activity
    /// until ``stop()``.
    init(timeout: TimeAmount, loop: EventLoop, onIdle: @escaping () -> Void) {
        self.timeout = timeout
        self.loop = loop
        self.onIdle = onIdle
        lastActivity = loop.now
        schedule(at: lastActivity + timeout)
    }

    /// Something was read or written now.
    func touch() {
        lastActivity = loop.now
    }

    /// Stops the timer: the connection closed.
    func stop() {
        check?.cancel()
        check = nil
        onIdle = nil
    }

    private func schedule(at deadline: NIODeadline) {
        check = loop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in wentOff() }
    }

    private func wentOff() {
        let due = lastActivity + timeout
        if due > loop.now {
            schedule(at: due)
            return
        }
        guard let onIdle else { return }
        onIdle()
        // Unless that closed the connection: the next timeout, counted from now.
        if self.onIdle != nil { schedule(at: loop.now + timeout) }
    }
}
