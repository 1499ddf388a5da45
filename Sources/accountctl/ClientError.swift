import AccountdClient
import AccountdProtocol

/// A failure that `accountctl` reports on stderr before it exits with a status of its own.
///
/// Most usage errors are not here: they are argument-parser's `ValidationError`, and
/// ``AccountCtl/main()`` maps them to exit status 2.
struct ClientError: Error, CustomStringConvertible {
    private enum Code {
        case daemon
        case failed
        case unreachable
        case usage
    }

    private let code: Code
    /// What happened and, where it helps, what to do; printed after `accountctl: `.
    let message: String

    /// The exit status: 1 for the daemon's errors and failed work, 2 for usage, 69 when
    /// the daemon cannot be reached.
    var exitStatus: Int32 {
        switch code {
        case .daemon, .failed: 1
        case .unreachable: 69
        case .usage: AccountCtl.usageExitStatus
        }
    }

    var description: String { message }

    /// The command line is wrong in a way argument-parser cannot see (exit 2).
    static func usage(_ message: String) -> ClientError {
        ClientError(code: .usage, message: message)
    }

    /// The daemon answered with an error reply.
    static func daemon(_ name: ErrorName, message: String?) -> ClientError {
        ClientError(code: .daemon, message: "\(name.shortName): \(message ?? "(no message)")")
    }

    /// The work was done but its outcome is a failure, e.g. an unhealthy account.
    static func failed(_ message: String) -> ClientError {
        ClientError(code: .failed, message: message)
    }

    /// The socket could not be connected.
    static func unreachable(socket: String, reason: String) -> ClientError {
        ClientError(
            code: .unreachable,
            message: """
                cannot connect to accountd at \(socket): \(reason)
                Is the daemon running? Start it with `make run` (in the source tree) or \
                `systemctl start accountd`, or point --socket / ACCOUNTD_SOCKET at its socket.
                """)
    }

    /// The connection broke, or what came over it is not the protocol.
    static func connectionLost(socket: String, _ what: String) -> ClientError {
        ClientError(code: .unreachable, message: "connection to accountd at \(socket) lost: \(what)")
    }
}

extension ClientError {
    /// The client library's error, with the exit status it maps to: 1 for the daemon's
    /// errors and unreadable replies, 69 when the daemon cannot be reached or the
    /// connection is lost.
    init(_ error: AccountdClientError) {
        switch error {
        case .daemon(let error): self = .daemon(error.name, message: error.message)
        case .unreachable(let socket, let reason): self = .unreachable(socket: socket, reason: reason)
        case .connectionLost(let socket, let reason): self = .connectionLost(socket: socket, reason)
        case .unexpectedReply(let error): self = .failed(error.description)
        }
    }
}
