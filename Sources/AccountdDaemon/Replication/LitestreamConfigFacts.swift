import AccountdCore
import AccountdProtocol
import Foundation
import Yams

/// What a Litestream configuration accountd wrote (``LitestreamConfig``) says, read back:
/// the data root, the replica's base URL and the control socket. `accountd prepare-litestream`
/// reads the very file the `accountd-litestream` unit hands Litestream, so what it compares
/// is what Litestream is about to use (not accountd's settings, which may not be reloaded yet).
///
/// Read with Yams as accountd writes it: the first entry of `dbs` is the `accounts/`
/// directory with the replica's base URL; `socket.path` the control socket.
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

    /// The facts in `text`, the contents of `path`: the first database entry's `dir` and
    /// replica `url`, and `socket.path`.
    static func parse(_ text: String, path: String) throws -> LitestreamConfigFacts {
        let yaml = try? Yams.compose(yaml: text)
        let first = yaml?["dbs"]?.sequence?.first
        let socket = yaml?["socket"]?["path"]?.string
        guard let accounts = first?["dir"]?.string, accounts.hasSuffix("/accounts"), let replica = first?["replica"]?["url"]?.string else {
            throw AccountdError(
                .storage,
                "\(path) is not a Litestream configuration accountd wrote (it lacks the accounts/ directory entry or the replica's url); "
                    + "check --litestream-config: it must be replication.litestream.config (/run/accountd/litestream.yml by default)",
                file: path)
        }
        return LitestreamConfigFacts(dataRoot: String(accounts.dropLast("/accounts".count)), replica: replica, socket: socket)
    }
}
