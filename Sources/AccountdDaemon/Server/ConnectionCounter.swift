import Synchronization

/// Counts open connections against `limits.maxConnections`, and reports them to the
/// daemon's metrics (accepted, refused, open).
final class ConnectionCounter: Sendable {
    let limit: Int
    private let metrics: DaemonMetrics
    private let open = Atomic<Int>(0)

    init(limit: Int, metrics: DaemonMetrics) {
        self.limit = limit
        self.metrics = metrics
    }

    /// Takes a slot; false when the limit is reached (the slot is not taken).
    func enter() -> Bool {
        let now = open.add(1, ordering: .relaxed).newValue
        if now > limit {
            open.subtract(1, ordering: .relaxed)
            metrics.connectionRefused()
            return false
        }
        metrics.connectionAccepted(open: now)
        return true
    }

    func leave() { metrics.connections(open: open.subtract(1, ordering: .relaxed).newValue) }
}
