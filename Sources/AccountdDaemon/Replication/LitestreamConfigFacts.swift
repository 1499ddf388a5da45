import AccountdCore
import AccountdProtocol
import Foundation

/// What a Litestream configuration accountd wrote (``LitestreamConfig``) says, read back:
/// the data root, the replica's base URL and the control socket. `accountd prepare-litestream`
/// reads the very file the `accountd-litestream` unit hands Litestream, so what it compares
/// is what Litestream is about to use (not accountd's settings, which may not be reloaded yet).
///
/// Only accountd's own layout is read: every value it needs is a double-quoted scalar on a
/// line of its own (`- dir: "…/accounts"`, the first `url: "…"`, `path: "…"` under `socket:`).
public struct LitestreamConfigFacts: Sendable, Equatable {
    /// The data root: the parent of the `accounts/` directory entry.
    public var dataRoot: String
    /// The replica's base URL (with any password: never shown).
    public var replica: String
    /// Litestream's control socket; nil when the file names none.
    public var socket: String?

    public init(dataRoot: String, replica: String, socket: String?) {
        self.dataRoot = dataRoot
        self.replica = replica
        self.socket = socket
    }

    /// Reads the file at `path`.
    ///
    /// - Throws: `storage` when it cannot be read, or is not a configuration accountd wrote.
    public static func read(_ path: String) throws -> LitestreamConfigFacts {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AccountdError(
                .storage,
                "Litestream's configuration \(path) cannot be read: \(String(cString: strerror(errno))); accountd writes it at start and reload "
                    + "when replication.litestream.replica is set: start accountd first",
                file: path)
        }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    /// The facts in `text`, the contents of `path`.
    static func parse(_ text: String, path: String) throws -> LitestreamConfigFacts {
        var accounts: String?
        var replica: String?
        var socket: String?
        var inSocket = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if !line.hasPrefix(" ") && !line.hasPrefix("#") { inSocket = line == "socket:" }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if accounts == nil, let value = value(of: "- dir:", in: trimmed) {
                accounts = value
            } else if replica == nil, let value = value(of: "url:", in: trimmed) {
                replica = value
            } else if inSocket, socket == nil, let value = value(of: "path:", in: trimmed) {
                socket = value
            }
        }
        guard let accounts, accounts.hasSuffix("/accounts"), let replica else {
            throw AccountdError(
                .storage,
                "\(path) is not a Litestream configuration accountd wrote (it lacks the accounts/ directory entry or the replica's url); "
                    + "check --litestream-config: it must be replication.litestream.config (/run/accountd/litestream.yml by default)",
                file: path)
        }
        return LitestreamConfigFacts(dataRoot: String(accounts.dropLast("/accounts".count)), replica: replica, socket: socket)
    }

    /// The double-quoted scalar after `key` on `line`; nil when the line holds another key.
    private static func value(of key: String, in line: String) -> String? {
        guard line.hasPrefix(key + " ") else { return nil }
        return (try? JSONParser.parse(String(line.dropFirst(key.count + 1))))?.stringValue
    }
}
