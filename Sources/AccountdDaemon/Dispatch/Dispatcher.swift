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
    func handle(_ request: Request, peer: PeerCredentials, writer: ReplyWriter) async throws {
        do {
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
            try await route(request, writer: writer)
        } catch is ClientGone {
            throw ClientGone()
        } catch {
            try await writer.send(ErrorMapping.reply(for: error, method: request.method, logger: logger))
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
        case .get, .set, .delete, .keys:
            try await preferences(request, writer: writer)
        case .watch:
            throw ProtocolError(.invalidRequest, "Watch is handled by the connection")
        }
    }
}
