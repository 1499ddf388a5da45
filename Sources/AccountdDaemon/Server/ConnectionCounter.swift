import Synchronization

/// Counts open connections against `limits.maxConnections`.
final class ConnectionCounter: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// Takes a slot; false when the limit is reached (the slot is not taken).
    func enter() -> Bool {
        let now = open.add(1, ordering: .relaxed).newValue
        if now > limit {
            open.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func leave() { open.subtract(1, ordering: .relaxed) }
}
