import AccountdCore
import AccountdProtocol
import Logging
import NIOCore
import Synchronization

/// The daemon's one responder: every request, on either socket, goes through
/// ``respond(to:peer:framing:writer:)``, and nothing else answers a request.
///
/// 1. The line is decoded once (``decode(_:peer:framing:)``): the envelope, the streaming
///    flag, the parameters into a typed ``Command``; the account it acts on is resolved
///    (the caller's active one when it names none) and the peer's access checked once
///    (``authorize(_:peer:)``, the one access decision).
/// 2. One `switch` over the command handles it and chooses how it runs: answered at once
///    when memory is enough (Ping, Info, the daemon's Status, most Gets) or a bounded read
///    is (a short `Query` of a warm account: ``DataService/queryAtOnce(_:_:maxRows:)``), handed to the
///    table's group commit (a Set or Delete on an open table), or run in a task on the
///    connection's event loop (everything that waits for a lock, SQLite or the disk).
/// 3. However it ran, it ends in ``finish(_:account:since:oneway:_:writer:)``, the one funnel: an error becomes
///    its wire form there (``ErrorMapping``, asking the error's ``WireError``), the request
///    is counted there once, with its outcome and latency, and its last reply is written
///    there, to the connection's one writer.
///
/// A request the connection refuses by its state (the daemon is stopping, the connection
/// watches, the line is too large) is not decoded at all (``refuse(_:line:framing:writer:)``),
/// and ends in the same funnel.
///
/// A class, not a struct: every closure that ends a request (a group commit's answer, a
/// task's end) captures it, and a struct's copy retained each of its services and its
/// logger's parts, on the thread that commits as much as on the event loops.
final class Dispatcher: Sendable {
    let services: Services
    let policy: Reloadable<AccessPolicy>
    let logger: Logger
    /// How many accounts `Migrate` works on at once.
    let migrateConcurrency: Int
    /// Each event loop's queue of group-commit answers (``LoopAnswers``), made on first use.
    let answerQueues = Mutex<[ObjectIdentifier: LoopAnswers]>([:])

    init(services: Services, policy: Reloadable<AccessPolicy>, logger: Logger, migrateConcurrency: Int) {
        self.services = services
        self.policy = policy
        self.logger = logger
        self.migrateConcurrency = migrateConcurrency
    }

    /// A decoded request: what it asks for, who asks, and how its replies are taken.
    /// A class: a call is handed along its path (decoded, run, answered after a group
    /// commit), and each hand-over retains one object rather than copying the command.
    final class Call: Sendable {
        /// The command, naming the account a preference call acts on (the caller's active
        /// one when the request named none).
        let command: Command
        let more: Bool
        /// Who asked, as the kernel reported it at accept.
        let peer: PeerCredentials
        /// When its line was taken up: the start of its latency.
        let received: ContinuousClock.Instant
        /// The client asked for no reply (varlink's `oneway`): the call runs, its replies are dropped.
        let oneway: Bool

        init(command: Command, more: Bool, peer: PeerCredentials, received: ContinuousClock.Instant = .now, oneway: Bool = false) {
            self.command = command
            self.more = more
            self.peer = peer
            self.received = received
            self.oneway = oneway
        }
    }

    /// What became of a request, for the connection's state: whether it is over.
    enum Response: Equatable {
        /// Answered (or, being `oneway` or blank, done without a reply).
        case answered
        /// Runs on (a task, a group commit): ``ConnectionWriter/requestEnded`` is called when it ends.
        case running
        /// A `Watch`: the connection streams events from now on.
        case watching
    }

    /// Handles one request line from `peer`, read as `framing` says, writing its replies to `writer`.
    ///
    /// On the varlink socket, `org.varlink.service` calls are answered here too, and a
    /// `oneway` call gets no reply, not even an error once the call was decoded.
    func respond(to line: [UInt8], peer: PeerCredentials, framing: Framing, writer: ConnectionWriter) -> Response {
        let call: Call
        switch decode(line, peer: peer, framing: framing) {
        case .blank:
            return .answered
        case .service(let reply):
            writer.send(reply)
            return .answered
        case .refused(let error, let method, let received, let oneway):
            return finish(method, since: received, oneway: oneway, .failure(error), writer: writer)
        case .call(let decoded):
            call = decoded
        }
        return handle(call, writer: writer)
    }

    /// Refuses a request by the connection's state, without decoding it: its reply, unless
    /// it is blank or a varlink `oneway` call (read from the envelope alone), and its count
    /// (under the method `unknown`). `line` is nil for a request that could not be read whole.
    func refuse(_ refusal: RefusedRequest, line: [UInt8]?, framing: Framing, writer: ConnectionWriter) {
        var oneway = false
        if let line {
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }) {
                return
            }
            oneway = framing == .varlink && VarlinkCall.isOneway(line)
        }
        finish(nil, since: .now, oneway: oneway, .failure(refusal), writer: writer)
    }

    // MARK: The one call

    /// Handles a decoded call, choosing how it runs.
    private func handle(_ call: Call, writer: ConnectionWriter) -> Response {
        switch call.command {
        case .ping:
            return finish(call, .success(Reply()), writer: writer)
        case .info:
            return finish(call, .success(Reply(services.info())), writer: writer)
        case .status(nil):
            _ = activeAccount(of: call.peer)  // one the caller may no longer read is cleared first
            var status = services.switching.daemonStatus(for: call.peer.uid)
            status.bundleCheckSeconds = services.bundleCheckSeconds.map { Int($0) }
            return finish(call, .success(Reply(status)), writer: writer)
        case .status(let account?):
            return task(call, writer) { [self] _ in
                let (status, disk) = try await services.switching.accountStatus(account)
                var reply = AccountStatusReply(status)
                reply.disk = disk
                return Reply(reply)
            }
        case .watch:
            // Counted as it starts; the connection subscribes. A oneway Watch would stream to nobody.
            finish(.watch, since: call.received, oneway: true, .success(nil), writer: writer)
            return call.oneway ? .answered : .watching
        case .get, .keys:
            do {
                guard let reply = try readAtOnce(call.command) else { return task(call, writer) { [self] replies in try await read(call.command, uid: call.peer.uid, writer: replies) } }
                return finish(call, .success(reply), writer: writer)
            } catch {
                return finish(call, .failure(error), writer: writer)
            }
        case .set, .delete:
            return change(call, writer: writer)
        case .list(let details):
            return task(call, writer) { [self] replies in try await list(details: details, peer: call.peer, writer: replies) }
        case .switchAccount(let account, let create):
            return task(call, writer) { [self] replies in
                try await switchAccount(account, create: create, peer: call.peer, more: call.more, writer: replies)
            }
        case .migrate(let target, let rollout):
            return task(call, writer) { [self] replies in try await migrate(target, rollout: rollout, more: call.more, writer: replies) }
        case .export(let account, let format):
            return task(call, writer) { [self] replies in try await export(account, format: format, peer: call.peer, writer: replies) }
        case .verify(let account):
            return task(call, writer) { [self] _ in Reply(VerifyResult(try await services.maintenance.verify(account))) }
        case .plan(let account):
            return task(call, writer) { [self] _ in Reply(PlanReply(try await services.maintenance.plan(account))) }
        case .snapshots(let account):
            return task(call, writer) { [self] _ in try await snapshots(account) }
        case .restore(let account, let snapshot, let at, let reclaim):
            return task(call, writer) { [self] _ in
                if let at { return try await restore(account, at: at, reclaim: reclaim) }
                return try await restore(account, snapshot: snapshot, reclaim: reclaim)
            }
        case .snapshot(let account, let label):
            return task(call, writer) { [self] _ in Reply(SnapshotEntry(try await services.maintenance.snapshot(account, label: label))) }
        case .remove(let account, let purge, let handoff):
            return task(call, writer) { [self] _ in try await remove(account, purge: purge, handoff: handoff, caller: call.peer.uid) }
        case .metrics:
            return task(call, writer) { [self] _ in
                let services = services
                // The replication gauges, read now (through the shared look-up, within its deadline).
                if services.replication.settings.current != nil {
                    services.metrics.replication(try await services.maintenance.replication())
                }
                // Records of failed accounts a full disk kept from being saved are saved now if they can be.
                await services.switching.failedAccounts.saveAgainIfUnsaved(on: services.pool, logger: services.switching.logger)
                let text = try await services.pool.run { services.metricsText() }
                return Reply(MetricsReply(text: metricsText(text, for: call.peer)))
            }
        case .replication:
            return task(call, writer) { [self] _ in Reply(try await services.maintenance.replication(include: readable(by: call.peer))) }
        case .pull(let account, let replica, let reclaim):
            return task(call, writer) { [self] _ in Reply(try await services.maintenance.pull(account, replica: replica, reclaim: reclaim)) }
        case .importAccount(let account, let path, let rebind, let overReplica):
            return task(call, writer) { [self] replies in
                Reply(
                    try await services.maintenance.importFile(
                        account, path: path, rebind: rebind, overReplica: overReplica, caller: call.peer, clientGone: replies.isClientGone))
            }
        case .query(let account, let statement, let maxRows, let migrate):
            // A short read of a warm account is answered at once; any other runs on the pool.
            if migrate, !call.more, let outcome = services.data.queryAtOnce(account, statement, maxRows: maxRows) {
                let answer = Result { () throws -> Reply in
                    let reply = try outcome.get()
                    // A reload that revoked the grant while it ran: its rows are not sent.
                    if let account { try check(.read(account), for: .query, peer: call.peer) }
                    return Reply(reply)
                }
                return finish(call, answer, writer: writer)
            }
            return task(call, writer) { [self] replies in
                try await query(account, statement, maxRows: maxRows, migrate: migrate, more: call.more, peer: call.peer, writer: replies)
            }
        case .execute(let account, let statements, let migrate):
            return task(call, writer) { [self] replies in try await execute(account, statements, migrate: migrate, peer: call.peer, writer: replies) }
        }
    }

    /// Runs `body` in a task on the connection's event loop, for a call that waits (for a
    /// lock, SQLite, the disk). `body` may stream replies through its ``ReplyWriter``; it
    /// returns the last one, which the funnel writes, or nil when it wrote it itself (a large
    /// `Query` reply, made off the event loop).
    func task(_ call: Call, _ writer: ConnectionWriter, _ body: @escaping @Sendable (ReplyWriter) async throws -> Reply?) -> Response {
        // What was answered before this call goes out now, not once it is done.
        writer.flush()
        let replies = ReplyWriter(writer, dropping: call.oneway)
        let bound = NIOLoopBound(writer, eventLoop: writer.loop)
        let loop = writer.loop
        writer.requestTask = Task(executorPreference: writer.executor) {
            let outcome: Result<Reply?, any Error>
            do {
                outcome = .success(try await body(replies))
            } catch {
                outcome = .failure(error)
            }
            loop.execute { [self] in
                let writer = bound.value
                writer.requestTask = nil
                finish(call.command.method, account: call.command.account, since: call.received, oneway: call.oneway, outcome, writer: writer)
                writer.requestEnded()
            }
        }
        return .running
    }

    /// Ends `call` with `outcome` (see ``finish(_:account:since:oneway:_:writer:)``).
    @discardableResult
    func finish(_ call: Call, _ outcome: Result<Reply, any Error>, writer: ConnectionWriter) -> Response {
        finish(call.command.method, account: call.command.account, since: call.received, oneway: call.oneway, outcome.map { Optional($0) }, writer: writer)
    }

    /// The one funnel every request ends in, however it ran or was refused: its outcome
    /// becomes its last reply (an error its wire form, through ``ErrorMapping``), the
    /// request is counted, once, with its outcome and its latency since `received`, and
    /// the reply is written, unless the request was `oneway`, the client went away
    /// (``ClientGone``), or there is none (a Watch, counted as it starts).
    ///
    /// - Parameters:
    ///   - method: nil when the request was not read far enough to know it.
    ///   - account: the account the request acts on, named in the log line of its failure.
    @discardableResult
    func finish(
        _ method: Method?, account: AccountName? = nil, since received: ContinuousClock.Instant, oneway: Bool, _ outcome: Result<Reply?, any Error>,
        writer: ConnectionWriter
    ) -> Response {
        let reply: Reply?
        switch outcome {
        case .success(let made):
            reply = made
        case .failure(is ClientGone):
            services.metrics.request(method, outcome: "ClientGone", since: received)
            return .answered
        case .failure(is CancellationError):
            // Cancelled with its connection, closed at the end of shutdown's grace, which
            // answered and counted it `ShuttingDown` (Connection.closeLater).
            return .answered
        case .failure(let error):
            reply = ErrorMapping.reply(for: error, method: method, account: account, logger: logger)
        }
        services.metrics.request(method, error: reply?.error, since: received)
        if let reply, !oneway { writer.send(reply) }
        return .answered
    }

    // MARK: Decoding

    /// What a line decodes to.
    enum Decoded {
        /// A blank line (or a `oneway` service call): not a request, no reply.
        case blank
        /// An `org.varlink.service` call, answered from memory (varlink framing only); not counted.
        case service(Reply)
        /// Not decodable, or not allowed: the error, the method if it was read, when, and whether a reply is wanted.
        case refused(any Error, Method?, ContinuousClock.Instant, oneway: Bool)
        case call(Call)
    }

    /// Decodes one request line, checks the peer's access and the request's parameters.
    func decode(_ line: [UInt8], peer: PeerCredentials, framing: Framing) -> Decoded {
        let received = ContinuousClock.now
        var method: Method?
        var oneway = false
        do {
            let request: Request
            switch framing {
            case .line:
                guard let decoded = try Request.decode(line) else { return .blank }
                request = decoded
            case .varlink:
                guard let call = try VarlinkCall.decode(line) else { return .blank }
                oneway = call.oneway
                switch call.target {
                case .accountd(let decoded): request = decoded
                case .getInfo: return oneway ? .blank : .service(Reply(services.varlinkInfo()))
                case .getInterfaceDescription(let interface):
                    let description = try VarlinkInterfaces.description(of: interface)
                    return oneway ? .blank : .service(Reply(parameters: .object([("description", .string(description))])))
                }
            }
            method = request.method
            // Admin-only methods, and methods that always need a grant from a peer that has none,
            // are refused before their parameters are looked at.
            try check(policy.current.needBeforeParameters(request.method, peer: peer), for: request.method, peer: peer)
            if request.method.streaming == .required && !request.more {
                throw ProtocolError(
                    .expectedMore, "\(request.method.qualifiedName) streams its replies; send it with \"more\": true",
                    facts: [("method", .string(request.method.qualifiedName))])
            }
            let command = try authorize(try Command(request), peer: peer)
            return .call(Call(command: command, more: request.more, peer: peer, received: received, oneway: oneway))
        } catch {
            // A request refused before its method was read (a bad value of an inline Set, a
            // varlink call asking for an upgrade) still counts under the method it names.
            return .refused(error, method ?? Request.method(namedIn: line), received, oneway: oneway)
        }
    }

    /// Checks `need` for `peer` against the policy in force; a refusal is logged with the uid.
    func check(_ need: AccessPolicy.Need, for method: Method, peer: PeerCredentials) throws {
        // What anyone may do needs no look at the policy (nor its lock).
        if case .anyone = need { return }
        do {
            try policy.current.check(need, for: method, peer: peer)
        } catch {
            let why: String =
                switch need {
                case .admin: method.requiresAdmin ? "not an admin" : "not an admin, and no grant in access.grants is for it"
                case .read(let account?): "no read grant on account \(account)"
                case .write(let account?): "no write grant on account \(account)"
                case .anyone, .read(nil), .write(nil): "not allowed"
                }
            logger.warning("refused \(method.rawValue) from uid \(peer.uid): \(why)", metadata: ["peer_uid": "\(peer.uid)"])
            throw error
        }
    }
}
