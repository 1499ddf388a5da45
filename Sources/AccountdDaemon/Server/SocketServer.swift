import AccountdProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The Unix-socket server: binds (or adopts) the socket and runs one ``RequestFramer`` and
/// ``Connection`` per client.
///
/// The daemon runs one per socket: the line socket and the varlink socket, each with its
/// ``Framing``, over the same dispatcher, the same access rules and one shared count of
/// connections.
struct SocketServer: Service {
    /// Where the listening socket comes from.
    enum Listener: Sendable {
        /// Bind `path` ourselves, with `mode`; the file is removed again on exit.
        case bind(path: String, mode: UInt32)
        /// Serve on a socket handed over by systemd; it is never unlinked.
        case adopt(fd: CInt, description: String)
    }

    let listener: Listener
    /// How requests and replies are framed on this socket.
    let framing: Framing
    let dispatcher: Dispatcher
    let hub: EventHub
    let maximumRequestBytes: Int
    /// The connections open on every socket, against `limits.maxConnections`.
    let counter: ConnectionCounter
    /// `limits.idleTimeoutSeconds`; nil for no timeout.
    let idleTimeout: TimeAmount?
    let logger: Logger
    /// Called once the socket accepts connections.
    let onReady: @Sendable () -> Void
    /// Called when shutdown begins: no new connections are taken from then on.
    let onStopping: @Sendable () -> Void

    /// Listens, says it is ready, then serves until shutdown: in that order.
    func run() async throws {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let server = try await listen(bootstrap, initializer: channelInitializer())
        onReady()
        try await serve(server)
    }

    /// What each accepted connection gets: its peer's credentials, read once, then its
    /// pipeline, or none when it is over the limit.
    private func channelInitializer() -> @Sendable (any Channel) -> EventLoopFuture<Accepted> {
        let idleTimeout = idleTimeout
        let (dispatcher, hub, maximumRequestBytes, framing, counter, logger) = (
            dispatcher, hub, maximumRequestBytes, framing, counter, logger
        )
        return { channel in
            guard let provider = channel as? SocketOptionProvider else {
                return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
            }
            // Who the peer is, read from the kernel once, here; never looked up again.
            return PeerCredentialsReader.read(from: provider)
                .flatMapThrowing { peer in
                    // A connection over the limit gets no handler: it is answered with an error and closed.
                    if let refusal = counter.enter(uid: peer.uid, admin: dispatcher.policy.current.isAdmin(peer)) { return Accepted(channel: channel, peer: peer, refusal: refusal) }
                    channel.closeFuture.whenComplete { _ in counter.leave(uid: peer.uid) }
                    let pipeline = channel.pipeline.syncOperations
                    if framing == .varlink {
                        try pipeline.addHandler(ReplyTerminator())
                    }
                    try pipeline.addHandlers(
                        RequestFramer(maximumRequestBytes: maximumRequestBytes, framing: framing),
                        Connection(
                            peer: peer, dispatcher: dispatcher, hub: hub, maximumRequestBytes: maximumRequestBytes, framing: framing,
                            idleTimeout: idleTimeout, logger: logger))
                    return Accepted(channel: channel, peer: peer, refusal: nil)
                }
        }
    }

    /// Binds the socket (refusing a missing folder or a live daemon's socket, with its mode
    /// from the start), or adopts systemd's.
    private func listen(
        _ bootstrap: ServerBootstrap, initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Accepted>
    ) async throws -> NIOAsyncChannel<Accepted, Never> {
        switch listener {
        case .bind(let path, let mode):
            let flag = framing == .line ? "--socket" : "--varlink-socket"
            let folder = (path as NSString).deletingLastPathComponent
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.isEmpty ? "." : folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw SocketError(message: "cannot listen on \(path): its folder \(folder) does not exist; create it, or choose another \(flag)")
            }
            try Self.refuseLiveSocket(at: path, flag: flag)
            // The process's umask (0077) is never changed here: it is the whole process's, and
            // the two sockets bind at once while other threads make folders (hostile33e #2). The
            // socket is made under it, no wider than its owner, and given its mode just after:
            // a client that connects in between (before the daemon says it is ready) is refused,
            // never let in wider than configured.
            let server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true, childChannelInitializer: initializer)
            guard chmod(path, mode_t(mode)) == 0 else {
                throw SocketError(message: "cannot set mode \(String(mode, radix: 8)) on socket \(path): \(String(cString: strerror(errno)))")
            }
            logger.info("listening on \(path) (mode \(String(mode, radix: 8))\(framing == .varlink ? ", varlink" : ""))")
            return server
        case .adopt(let fd, let description):
            let server = try await bootstrap.bind(fd, childChannelInitializer: initializer)
            logger.info("listening on the socket systemd passed (\(description))\(framing == .varlink ? " for varlink" : "")")
            return server
        }
    }

    /// Runs each accepted connection in a child task until graceful shutdown, which stops
    /// the accepting and asks each open connection to finish its current request.
    private func serve(_ server: NIOAsyncChannel<Accepted, Never>) async throws {
        let counter = counter
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await accepted in connections.cancelOnGracefulShutdown() {
                    if let refusal = accepted.refusal {
                        let error = TooManyConnections(refusal: refusal, limit: refusal == .uid ? counter.perUid : counter.limit, reserve: counter.newcomerReserve)
                        group.addTask { await refuse(accepted, error) }
                        continue
                    }
                    group.addTask {
                        await withGracefulShutdownHandler {
                            try? await accepted.channel.closeFuture.get()
                        } onGracefulShutdown: {
                            accepted.channel.pipeline.fireUserInboundEventTriggered(Connection.ShutdownRequested())
                        }
                    }
                }
            }
            // No new connections; the ones open finish their current request.
            onStopping()
            hub.finishAll()
        }
    }

    /// Answers a connection over a limit with an error and closes it.
    private func refuse(_ accepted: Accepted, _ error: TooManyConnections) async {
        logger.warning(
            "refused a connection from uid \(accepted.peer.uid): \(error.wireMessage)",
            metadata: ["peer_uid": "\(accepted.peer.uid)"])
        let reply = error.reply
        let channel = accepted.channel
        try? await channel.writeAndFlush(ByteBuffer(string: reply.encoded(for: framing))).get()
        try? await channel.close()
    }

    /// Refuses to take over a socket path where another daemon is still answering.
    /// `flag` is the option that chooses the path, named in the error.
    static func refuseLiveSocket(at path: String, flag: String = "--socket") throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw SocketError(message: "\(path) exists and is not a socket; move it aside or choose another \(flag)")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            let bytes = Array(path.utf8.prefix(buffer.count - 1))
            buffer.copyBytes(from: bytes)
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if connected == 0 {
            throw SocketError(message: "another accountd is already serving on \(path); stop it first or choose another \(flag)")
        }
    }
}

/// A connection as the accept loop hands it over.
struct Accepted: Sendable {
    var channel: any Channel
    var peer: PeerCredentials
    /// Why the connection is refused (over `limits.maxConnections` or its uid's share); nil when admitted.
    var refusal: ConnectionCounter.Refusal?
}

struct SocketError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

extension SocketServer: CustomStringConvertible {
    // ServiceLifecycle logs services by their description; never let it dump settings or the environment.
    var description: String { "SocketServer(\(framing.rawValue))" }
}
