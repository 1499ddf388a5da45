import AccountdProtocol
import NIOCore
import NIOPosix

/// A connection to accountd over its Unix socket, with one async method per protocol method.
///
/// Replies come back as the typed models of `AccountdProtocol` (``SwitchResult``,
/// ``AccountStatusReply``, ...); streamed methods (`List`'s entries aside) are
/// `AsyncSequence`s; a daemon error is thrown as ``AccountdClientError/daemon(_:)`` with
/// its wire name.
///
/// ```swift
/// let client = try await AccountdClient.connect()
/// let result = try await client.switchAccount("alice")
/// print("alice is at version \(result.version)")
/// ```
///
/// **Errors.** Every public call throws only ``AccountdClientError``. The calls are declared
/// with plain `throws` rather than `throws(AccountdClientError)`: with typed throws, a
/// `do`/`catch` around them that matches `AccountdClientError.daemon(let error) where ...`
/// crashes the Swift 6.3 compiler.
///
/// **Sharing.** A client is an actor and may be shared between tasks. Its requests go out
/// one after another: a call waits until the one before it has its last reply, and a
/// stream holds the connection from its first element until its last. A stream left
/// before its end (a `break` out of `for try await`) closes the connection, since its
/// remaining replies would otherwise come first; later calls then throw
/// ``AccountdClientError/connectionLost(socket:reason:)``. Use one client per `watch()`.
public actor AccountdClient {
    /// The longest reply line accepted: an export chunk or a big value can be large.
    public static let maximumReplyLength = 64 << 20

    /// The socket this client is connected to.
    public nonisolated let socketPath: String
    private let channel: any Channel
    /// Reply lines, in batches as they were read; reading pauses while the inbox is full.
    private let inbox: ReplyInbox
    private var batch: [ArraySlice<UInt8>] = []
    private var batchIndex = 0
    /// Whether a request holds the connection, and who waits for it, first come first served.
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// Set once the connection is unusable; every later call throws it.
    private var failure: AccountdClientError?
    /// Why the last request could not be sent, for a read that then finds no reply.
    private var sendFailure: AccountdClientError?

    private init(socketPath: String, channel: any Channel, inbox: ReplyInbox) {
        self.socketPath = socketPath
        self.channel = channel
        self.inbox = inbox
    }

    deinit {
        channel.close(promise: nil)
        inbox.finish()
    }

    /// Connects to the daemon.
    ///
    /// - Parameter socketPath: the socket; when nil, `$ACCOUNTD_SOCKET`, else
    ///   `/run/accountd/accountd.sock` (see ``SocketPath/resolve(_:)``).
    /// - Throws: ``AccountdClientError/unreachable(socket:reason:)`` for a missing socket,
    ///   a refused connection or a permission problem, each with what to do.
    public static func connect(socketPath: String? = nil) async throws -> AccountdClient {
        let path = SocketPath.resolve(socketPath)
        guard !path.isEmpty, path.utf8.count < SocketPath.maximumLength else {
            throw AccountdClientError.unreachable(socket: path, reason: "the path does not fit in a Unix socket address")
        }
        let inbox = ReplyInbox()
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.recvAllocator, value: Self.readSizes)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ReplyFramer(inbox: inbox)) }
                }
                .connect(unixDomainSocketPath: path).get()
        } catch {
            throw AccountdClientError.unreachable(socket: path, reason: Self.reason(connecting: error))
        }
        return AccountdClient(socketPath: path, channel: channel, inbox: inbox)
    }

    /// How much one read of the socket takes: from 1 KiB for short replies up to 256 KiB, the
    /// daemon's pieces of an export, so that an export crosses from the event loop to the
    /// caller's task in as few hand-overs as the daemon's writes allow. With ``ReplyInbox``'s
    /// 16 reads, a client that stops taking replies holds at most 4 MiB.
    static let readSizes = AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 4096, maximum: 256 * 1024)

    /// Closes the connection. Calls after this throw ``AccountdClientError/connectionLost(socket:reason:)``.
    public func close() {
        fail(.connectionLost(socket: socketPath, reason: "the client closed the connection"))
    }

    private static func reason(connecting error: any Error) -> String {
        if let error = error as? IOError { return AccountdClientError.reason(errno: error.errnoCode) }
        if let error = error as? NIOConnectionError, let first = error.connectionErrors.first?.error as? IOError {
            return AccountdClientError.reason(errno: first.errnoCode)
        }
        return "\(error)"
    }

    // MARK: - One request at a time

    /// Waits until no other request holds the connection, sends `command` (asking for
    /// streamed replies when `more`), and holds the connection until ``finish()``.
    func begin(_ command: Command, more: Bool) async throws(AccountdClientError) {
        if busy {
            await withCheckedContinuation { waiters.append($0) }  // ownership is handed over by finish()
        } else {
            busy = true
        }
        if let failure {
            finish()
            throw failure
        }
        do {
            try await channel.writeAndFlush(ByteBuffer(string: command.request(more: more).encoded() + "\n")).get()
        } catch {
            // A daemon that refuses the connection (`TooManyConnections`) writes why and closes
            // it, maybe before this request went out: what it wrote is read as the reply, and
            // when it wrote nothing, the read fails with this.
            sendFailure = .connectionLost(socket: socketPath, reason: "sending the request failed: \(error)")
            channel.close(promise: nil)
        }
    }

    /// Lets the next waiting request have the connection.
    func finish() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }

    /// Gives up the connection after a stream was left before its end.
    func abandon() {
        fail(.connectionLost(socket: socketPath, reason: "an earlier stream was left before its last reply, so the connection was closed"))
        finish()
    }

    private func fail(_ error: AccountdClientError) {
        if failure == nil { failure = error }
        channel.close(promise: nil)
        inbox.finish()
    }

    /// The next reply line of the request that holds the connection.
    ///
    /// - Throws: ``AccountdClientError/connectionLost(socket:reason:)`` when the connection
    ///   ends first or a line is too long.
    func nextLine() async throws(AccountdClientError) -> ArraySlice<UInt8> {
        try await fillBatch()
        defer { batchIndex += 1 }
        return batch[batchIndex]
    }

    /// Every reply line read and not yet taken, at least one: how a stream takes a read's
    /// worth of lines with one call instead of one call per line.
    ///
    /// The taker gives back, with ``giveBack(_:)``, the lines after its request's last reply.
    func nextLines() async throws(AccountdClientError) -> ArraySlice<ArraySlice<UInt8>> {
        try await fillBatch()
        defer { batchIndex = batch.count }
        return batch[batchIndex...]
    }

    /// Puts back lines taken with ``nextLines()`` that belong to the next request.
    func giveBack(_ lines: ArraySlice<ArraySlice<UInt8>>) {
        guard !lines.isEmpty else { return }
        batch = Array(lines) + batch[batchIndex...]
        batchIndex = 0
    }

    private func fillBatch() async throws(AccountdClientError) {
        while batchIndex == batch.count {
            if let failure { throw failure }
            let next: [ArraySlice<UInt8>]?
            do {
                next = try await inbox.next()
            } catch let error as LineFramer.LineTooLong {
                let lost = AccountdClientError.connectionLost(
                    socket: socketPath, reason: "a reply is longer than \(error.limit >> 20) MiB; is accountd listening on this socket?")
                fail(lost)
                throw lost
            } catch {
                let lost = AccountdClientError.connectionLost(socket: socketPath, reason: "reading the reply failed: \(error)")
                fail(lost)
                throw lost
            }
            guard let next else {
                let lost =
                    failure ?? sendFailure ?? .connectionLost(socket: socketPath, reason: "the daemon closed the connection before its reply was complete")
                fail(lost)
                throw lost
            }
            batch = next
            batchIndex = 0
        }
    }

    /// Decodes a reply line, turning an error reply into ``AccountdClientError/daemon(_:)``.
    nonisolated func reply(_ line: ArraySlice<UInt8>) throws(AccountdClientError) -> Reply {
        let reply: Reply
        do {
            reply = try Reply.decode(line)
        } catch {
            throw AccountdClientError.connectionLost(socket: socketPath, reason: "\(error.message); is accountd listening on this socket?")
        }
        if let error = ProtocolError(reply: reply) { throw .daemon(error) }
        return reply
    }

    /// Sends a command that gets one reply and decodes it as `Model`.
    func call<Model: ReplyModel>(_ command: Command, as: Model.Type) async throws(AccountdClientError) -> Model {
        try await begin(command, more: false)
        defer { finish() }
        let line = try await nextLine()
        let reply = try reply(line)
        do {
            return try Model(parameters: reply.parameters)
        } catch {
            throw AccountdClientError.unexpectedReply(error)
        }
    }

    // MARK: - Checks before sending

    /// `name` as an account name, refused as the daemon would refuse it.
    ///
    /// - Throws: ``AccountdClientError/daemon(_:)`` with `InvalidAccountName`, as the
    ///   daemon's reply to a request with this name would be.
    nonisolated static func account(_ name: String) throws(AccountdClientError) -> AccountName {
        do {
            return try AccountName(requested: name)
        } catch {
            throw .daemon(error)
        }
    }

    /// `label` as a snapshot label, refused as the daemon would refuse it.
    ///
    /// - Throws: ``AccountdClientError/daemon(_:)`` with `InvalidParameter` (parameter
    ///   `label`), as the daemon's reply would be.
    nonisolated static func label(_ label: String) throws(AccountdClientError) -> SnapshotLabel {
        do {
            return try SnapshotLabel(label)
        } catch {
            throw .daemon(error)
        }
    }
}
