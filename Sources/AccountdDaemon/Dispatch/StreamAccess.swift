import AccountdProtocol
import Logging
import Synchronization

/// Ends a streamed read (a `Query` with `more`, an `Export`) once its caller may no longer
/// read the account: a reload that takes the grant (or the admin's rights) away stops the
/// streams already running, not only the requests after it (and a `Query` without `more`
/// still running gets `PermissionDenied` instead of its rows).
///
/// The check is made before each chunk is written (about 64 KiB of rows, 256 KiB of an
/// export), against the access policy in force then. A refused chunk is not written; the
/// statement or the export stops as for a client that went away, and the request's last
/// reply is `PermissionDenied`, after the chunks already sent.
///
/// The whole hook is ``guarding(_:)`` around the writer's `blockingWrite` and
/// ``ending(_:)`` around the work: the streaming machinery itself does not know of it.
final class StreamAccess: Sendable {
    let method: Method
    /// The account read; nil when the call has none (it fails with `NoActiveAccount`).
    let account: AccountName?
    let peer: PeerCredentials
    let policy: Reloadable<AccessPolicy>
    let logger: Logger
    /// The refusal, once a chunk was refused.
    private let refusal = Mutex<ProtocolError?>(nil)

    init(_ method: Method, account: AccountName?, peer: PeerCredentials, policy: Reloadable<AccessPolicy>, logger: Logger) {
        self.method = method
        self.account = account
        self.peer = peer
        self.policy = policy
        self.logger = logger
    }

    /// `write`, refusing each chunk (by throwing `PermissionDenied`) once `peer` may no
    /// longer read ``account``.
    func guarding(_ write: @escaping @Sendable ([UInt8]) throws -> Void) -> @Sendable ([UInt8]) throws -> Void {
        guard account != nil else { return write }
        return { [self] bytes in
            try check()
            try write(bytes)
        }
    }

    /// Runs `body`; when a chunk was refused meanwhile, its `PermissionDenied` is what it
    /// ends with, whatever error the refused write became on its way out.
    func ending<T>(_ body: () async throws -> T) async throws -> T {
        do {
            let result = try await body()
            if let refused = refusal.withLock({ $0 }) { throw refused }
            return result
        } catch {
            if let refused = refusal.withLock({ $0 }) { throw refused }
            throw error
        }
    }

    /// Throws `PermissionDenied` (and keeps it) when the policy in force no longer lets
    /// `peer` read ``account``: before each chunk, and before a read's one reply.
    func check() throws {
        guard let account else { return }
        if let refused = refusal.withLock({ $0 }) { throw refused }
        guard !policy.current.mayRead(account, peer: peer) else { return }
        let refused = ProtocolError(
            .permissionDenied,
            "\(method.rawValue) of account \(account) stopped: uid \(peer.uid) may no longer read it (a reload changed access.grants or admin.*); nothing more of it is sent",
            facts: [("method", .string(method.qualifiedName)), ("account", .string(account.rawValue))])
        refusal.withLock { $0 = refused }
        logger.warning(
            "stopped \(method.rawValue) of account \(account) for uid \(peer.uid): no read grant on it any more",
            metadata: ["peer_uid": "\(peer.uid)", "account": "\(account)"])
        throw refused
    }
}
