import AccountdProtocol

/// Why a call on ``AccountdClient`` failed.
///
/// The daemon's own errors arrive as ``daemon(_:)`` with their wire name, message and
/// facts; the other cases say that the daemon could not be reached or stopped answering.
///
/// Two of the daemon's errors the client finds itself, before sending, by the daemon's
/// own rules in `AccountdProtocol`, and throws as ``daemon(_:)`` exactly as the daemon
/// would reply: `InvalidAccountName` for an account name (fact `account`), and
/// `InvalidParameter` for a snapshot label (fact `parameter`: `label`). Nothing is sent
/// then, and the connection stays usable.
///
/// ```swift
/// do {
///     try await client.switchAccount("alice")
/// } catch AccountdClientError.daemon(let error) where error.name == .accountTooNew {
///     print("alice needs a newer schema bundle:", error.message)
/// }
/// ```
public enum AccountdClientError: Error, CustomStringConvertible, Sendable {
    /// The daemon answered with an error reply: `error.name` is the wire name
    /// (e.g. ``ErrorName/accountTooNew``), `error.facts` the reply's other parameters.
    case daemon(ProtocolError)
    /// The socket could not be connected; `reason` says why and what to check.
    case unreachable(socket: String, reason: String)
    /// The connection broke, or what came over it is not the protocol.
    case connectionLost(socket: String, reason: String)
    /// A reply came that this client cannot read: the daemon is probably another version.
    case unexpectedReply(ReplyDecodingError)

    /// The wire name of a daemon error, or nil for the other cases.
    public var errorName: ErrorName? {
        if case .daemon(let error) = self { error.name } else { nil }
    }

    public var description: String {
        switch self {
        case .daemon(let error): "\(error.name.shortName): \(error.message)"
        case .unreachable(let socket, let reason): "cannot connect to accountd at \(socket): \(reason)"
        case .connectionLost(let socket, let reason): "connection to accountd at \(socket) lost: \(reason)"
        case .unexpectedReply(let error): error.description
        }
    }

    /// Words for an `errno` from connecting, with what to do about the common ones.
    static func reason(errno code: Int32) -> String {
        switch code {
        case ENOENT: "no such file (the daemon is not running, or uses another socket)"
        case ECONNREFUSED: "connection refused (nothing is listening; the daemon may have stopped)"
        case EACCES, EPERM: "permission denied (the socket is mode 0660: join the daemon's group, or use sudo)"
        default: String(cString: strerror(code))
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
