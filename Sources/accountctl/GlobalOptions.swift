import AccountdClient
import AccountdProtocol
import ArgumentParser

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The options every command takes: where the daemon is, and whether to print raw JSON.
struct GlobalOptions: ParsableArguments {
    /// Where the socket is when neither `--socket` nor `ACCOUNTD_SOCKET` says.
    static let defaultSocketPath = SocketPath.defaultPath

    @Option(
        help: ArgumentHelp(
            "The daemon's socket (default: $ACCOUNTD_SOCKET, else \(defaultSocketPath)).",
            valueName: "path"),
        completion: .file())
    var socket: String?

    @Flag(help: "Print the raw parameters of each reply, one compact JSON object per line.")
    var json = false

    /// The socket to connect to: `--socket`, else `ACCOUNTD_SOCKET`, else the default.
    var socketPath: String { SocketPath.resolve(socket) }

    mutating func validate() throws {
        let path = socketPath
        if path.isEmpty { throw ValidationError("the socket path is empty") }
        if path.utf8.count >= SocketPath.maximumLength {
            throw ValidationError(
                "the socket path is \(path.utf8.count) bytes long; a Unix socket path must be shorter than \(SocketPath.maximumLength)")
        }
    }

    /// Connects to the daemon.
    ///
    /// - Throws: ``AccountdClientError/unreachable(socket:reason:)`` (exit 69) when the
    ///   socket cannot be connected.
    func connect() async throws -> AccountdClient {
        try await AccountdClient.connect(socketPath: socketPath)
    }
}

/// Checks an account name before anything is sent, so a bad one is a usage error (exit 2).
///
/// - Throws: `ValidationError` with the rule the name breaks.
func validateAccountName(_ name: String) throws {
    if let reason = AccountName.problem(in: name) {
        throw ValidationError("invalid account name \(AccountName.quoted(name)): \(reason)")
    }
}
