import AccountdProtocol
import Synchronization

/// Counts open connections against `limits.maxConnections` and each uid's share of them
/// (`limits.maxConnectionsPerUid`), and reports them to the daemon's metrics (accepted,
/// refused, open; a refusal is also counted as a request with outcome `TooManyConnections`).
/// One person's idle connections so never lock another person out, and the last
/// ``newcomerReserve`` of the total go only to a uid with fewer than
/// ``newcomerConnections`` open: two or three uids each at their share cannot hold every
/// connection between them. Root (uid 0), who
/// administers the daemon, counts against the total only; an admin may take
/// `limits.adminReservedConnections` more than the total, so that the metrics unit and an
/// operator still reach a daemon whose connections others hold.
final class ConnectionCounter: Sendable {
    /// `limits.maxConnections`.
    let limit: Int
    /// `limits.maxConnectionsPerUid`.
    let perUid: Int
    /// `limits.adminReservedConnections`: admins' connections beyond ``limit``.
    let adminReserve: Int
    /// How many of ``limit`` only a uid with fewer than ``newcomerConnections`` open may take:
    /// an eighth (none below 16 connections).
    let newcomerReserve: Int
    /// How many connections a uid may have open and still take one of the ``newcomerReserve``.
    static let newcomerConnections = 4
    private let metrics: DaemonMetrics

    private struct State {
        var open = 0
        var byUid: [UInt32: Int] = [:]
    }

    private let state = Mutex(State())

    /// Why a connection was not taken.
    enum Refusal: Error, Equatable {
        /// `limits.maxConnections` are open.
        case total
        /// Its uid has `limits.maxConnectionsPerUid` open.
        case uid
        /// Only the ``ConnectionCounter/newcomerReserve`` is left, and its uid has
        /// ``ConnectionCounter/newcomerConnections`` or more open.
        case reserved
    }

    init(limit: Int, perUid: Int? = nil, adminReserve: Int = 0, metrics: DaemonMetrics) {
        self.limit = limit
        self.perUid = max(1, min(perUid ?? limit, limit))
        self.adminReserve = adminReserve
        newcomerReserve = limit >= 16 ? limit / 8 : 0
        self.metrics = metrics
    }

    /// Takes a slot for a connection of `uid`, an admin when `admin` (who may use the
    /// reserve); the refusal when a limit is reached (no slot is taken).
    func enter(uid: UInt32, admin: Bool = false) -> Refusal? {
        let outcome = state.withLock { state -> Result<Int, Refusal> in
            if state.open >= limit + (admin ? adminReserve : 0) { return .failure(.total) }
            let mine = state.byUid[uid, default: 0]
            if mine >= perUid && uid != 0 { return .failure(.uid) }
            if uid != 0 && !admin && mine >= Self.newcomerConnections && state.open >= limit - newcomerReserve { return .failure(.reserved) }
            state.open += 1
            state.byUid[uid] = mine + 1
            return .success(state.open)
        }
        switch outcome {
        case .success(let open):
            metrics.connectionAccepted(open: open)
            return nil
        case .failure(let refusal):
            metrics.connectionRefused()
            // Its request, unread, counted once, here: the refusal is its reply.
            metrics.request(nil, error: .tooManyConnections, since: .now)
            return refusal
        }
    }

    /// Gives back the slot of a connection of `uid` that closed.
    func leave(uid: UInt32) {
        let open = state.withLock { state -> Int in
            state.open -= 1
            let left = state.byUid[uid, default: 1] - 1
            state.byUid[uid] = left > 0 ? left : nil
            return state.open
        }
        metrics.connections(open: open)
    }
}
