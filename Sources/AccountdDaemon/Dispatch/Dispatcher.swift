import AccountdCore
import AccountdProtocol
import Logging

/// Routes each request to its handler, after access and streaming checks, and
/// turns every failure into an error reply.
struct Dispatcher: Sendable {
    let service: AccountService
    let policy: Reloadable<AccessPolicy>
    let logger: Logger
    /// Where `Export` stages `sqlite` copies.
    let temporaryDirectory: String
    /// How many accounts `Migrate` works on at once.
    let migrateConcurrency: Int

    /// Handles one request, writing its replies.
    ///
    /// - Throws: ``ClientGone`` only: every other failure becomes an error reply.
    func handle(_ request: Request, peer: PeerCredentials, writer: ReplyWriter) async throws(ClientGone) {
        do {
            try admit(request, peer: peer)
            try await route(request, writer: writer)
        } catch let error as ClientGone {
            throw error
        } catch {
            try await writer.send(ErrorMapping.reply(for: error, method: request.method, logger: logger))
        }
    }

    /// The reply to a request that is answered without waiting for anything: Ping, Info,
    /// the daemon's Status, and Get or Keys on values held in memory. Nil when the request
    /// needs ``handle(_:peer:writer:)``.
    ///
    /// Connections call this on their event loop for every request, so the common small
    /// requests cost no task switch and no hop to another thread.
    func immediateReply(to request: Request, peer: PeerCredentials) -> Reply? {
        switch request.method {
        case .ping, .info, .status, .get, .keys: break
        default: return nil
        }
        do {
            try admit(request, peer: peer)
            switch request.method {
            case .ping: return Reply()
            case .info: return Reply(parameters: service.info())
            case .status:
                guard try request.parameters.account() == nil else { return nil }
                return Reply(parameters: service.daemonStatus())
            default: return try preferenceReadAtOnce(request)
            }
        } catch {
            return ErrorMapping.reply(for: error, method: request.method, logger: logger)
        }
    }

    /// Checks the peer's role and the request's streaming flag.
    func admit(_ request: Request, peer: PeerCredentials) throws {
        do {
            try policy.current.check(request.method, peer: peer)
        } catch {
            logger.warning(
                "refused \(request.method.rawValue) from uid \(peer.uid): not an admin", metadata: ["peer_uid": "\(peer.uid)"])
            throw error
        }
        if request.method.streaming == .required && !request.more {
            throw ProtocolError(
                .expectedMore, "\(request.method.qualifiedName) streams its replies; send it with \"more\": true",
                facts: [("method", .string(request.method.qualifiedName))])
        }
    }

    private func route(_ request: Request, writer: ReplyWriter) async throws {
        let parameters = request.parameters
        switch request.method {
        case .info:
            try await writer.send(Reply(parameters: service.info()))
        case .ping:
            try await writer.send(Reply())
        case .status:
            try await status(parameters, writer: writer)
        case .list:
            try await list(parameters, writer: writer)
        case .switchAccount:
            try await switchAccount(request, writer: writer)
        case .migrate:
            try await migrate(request, writer: writer)
        case .export:
            try await export(parameters, writer: writer)
        case .verify:
            try await verify(parameters, writer: writer)
        case .snapshots:
            try await snapshots(parameters, writer: writer)
        case .restore:
            try await restore(parameters, writer: writer)
        case .snapshot:
            try await snapshot(parameters, writer: writer)
        case .remove:
            try await remove(parameters, writer: writer)
        case .get, .set, .delete, .keys:
            try await preferences(request, writer: writer)
        case .watch:
            throw ProtocolError(.invalidRequest, "Watch is handled by the connection")
        }
    }
}
