import AccountdProtocol

/// A request the connection refuses by its state, without reading it, as the error it gets.
///
/// The connection's state decides (``ConnectionStateMachine/Refusal``); this type says how
/// each refusal goes on the wire, as every ``WireError`` does.
struct RefusedRequest: WireError {
    /// Why the request is refused.
    let refusal: ConnectionStateMachine.Refusal
    /// `requests.maxBytes`, quoted by `RequestTooLarge`.
    let maximumRequestBytes: Int

    var wireName: ErrorName {
        switch refusal {
        case .watching: .invalidRequest
        case .shuttingDown: .shuttingDown
        case .requestTooLarge: .requestTooLarge
        }
    }

    var wireMessage: String {
        switch refusal {
        case .watching: "this connection is watching events; open another connection for other requests"
        case .shuttingDown: "accountd is shutting down; retry when it is back"
        case .requestTooLarge: "a request may be at most \(maximumRequestBytes) bytes (requests.maxBytes); the connection is closed"
        }
    }

    var wireFacts: [(String, JSONValue)] {
        refusal == .requestTooLarge ? [("limit", JSONValue(maximumRequestBytes))] : []
    }
}

/// A connection over `limits.maxConnections`: answered with this error, then closed.
struct TooManyConnections: WireError {
    /// Which limit it met.
    let refusal: ConnectionCounter.Refusal
    /// `limits.maxConnections`, or `limits.maxConnectionsPerUid` for ``ConnectionCounter/Refusal/uid``.
    let limit: Int
    /// The connections kept for uids with few open (``ConnectionCounter/newcomerReserve``).
    var reserve = 0

    var wireName: ErrorName { .tooManyConnections }
    var wireMessage: String {
        switch refusal {
        case .uid:
            "accountd already serves \(limit) connections of this uid (limits.maxConnectionsPerUid); close some of them, or retry later"
        case .total:
            "accountd already serves \(limit) connections (limits.maxConnections); retry later"
        case .reserved:
            "accountd keeps the last \(reserve) of its \(limit) connections (limits.maxConnections) for uids with fewer than \(ConnectionCounter.newcomerConnections) open, and this uid has more; close some of them, or retry later"
        }
    }
    var wireFacts: [(String, JSONValue)] { [("limit", JSONValue(limit))] }
}
