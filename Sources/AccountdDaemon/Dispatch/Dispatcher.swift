import AccountdCore
import AccountdProtocol
import Logging

/// The one way a request goes through the daemon: admitted, started, and, when it
/// must wait, run.
///
/// 1. ``admit(_:peer:)`` decodes the line once, checks the streaming flag, decodes the
///    parameters into a typed ``Command``, resolves the account it acts on (the caller's
///    active one when it names none) and checks the peer's access to it
///    (``authorize(_:peer:)``, the one access decision).
/// 2. ``start(_:committed:)`` answers it at once when memory is enough (Ping, Info, the
///    daemon's Status, most Gets and Keys), hands a Set or Delete on an open table to its
///    group commit, or says that it needs a task.
/// 3. ``run(_:writer:)`` handles it in that task, for everything that waits for a
///    lock, SQLite or the disk.
///
/// Each step turns every failure into an error reply through ``reply(for:method:)``, the
/// one funnel to wire names; the connection only writes what comes out. Each request is
/// counted once, with its outcome and latency, where its last reply is made
/// (``DaemonMetrics/request(_:error:since:)``).
struct Dispatcher: Sendable {
    let services: Services
    let policy: Reloadable<AccessPolicy>
    let logger: Logger
    /// How many accounts `Migrate` works on at once.
    let migrateConcurrency: Int

    /// An admitted request: what it asks for, who asks, and whether its client takes
    /// streamed replies.
    struct Call: Sendable {
        /// The command, naming the account a preference call acts on (the caller's active
        /// one when the request named none).
        var command: Command
        var more: Bool
        /// Who asked, as the kernel reported it at accept.
        var peer: PeerCredentials
        /// When its line was admitted: the start of its latency.
        var received = ContinuousClock.now
        /// The client asked for no reply (varlink's `oneway`): the call runs, its replies are dropped.
        var oneway = false
    }

    /// What ``admit(_:peer:)`` made of a line.
    enum Admission {
        /// A blank line: not a request, no reply.
        case blank
        /// Refused, with the error reply.
        case refused(Reply)
        /// Answered from memory by `org.varlink.service` (varlink framing only).
        case served(Reply)
        case admitted(Call)
    }

    /// How a call is run, as ``start(_:committed:)`` decides.
    enum Start {
        /// Answered already.
        case answered(Reply)
        /// Handed to a group commit; the reply comes through the `committed` callback.
        case committing
        /// Needs a task: call ``run(_:writer:)``.
        case task
        /// A `Watch`: the connection subscribes to events.
        case watch
    }

    /// A change handed to a group commit, as its table ended it: made on the committing
    /// thread, which does nothing else for it. The connection carries it to its event loop
    /// and ends the call there with ``end(_:_:)``: the reply, the event and the count are
    /// made on the event loops, beside the other requests, not one after another on the
    /// thread that the next commit waits for.
    struct Committed: Sendable {
        let place: PreferencePlace
        let change: PreferenceDatabase.Change
        /// For a delete, whether the key existed; or why the change was not kept.
        let result: Result<Bool, any Error>
    }

    /// How a call handed to a group commit ends (``end(_:_:)``).
    enum Ending {
        /// Committed, or failed: the reply.
        case answered(Reply)
        /// A switch or restore closed the account's table first: run this call (naming the
        /// account it was meant for) with ``run(_:writer:)``, which waits for that switch or
        /// restore and tries again.
        case retry(Call)
    }

    /// Decodes one request line, checks the peer's access and the request's parameters.
    ///
    /// `framing` says how the line is read: a line of the line protocol, or a varlink
    /// message, whose `org.varlink.service` calls are answered here and whose `oneway`
    /// calls get no reply, not even an error once the call was decoded.
    func admit(_ line: [UInt8], peer: PeerCredentials, framing: Framing = .line) -> Admission {
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
                case .getInfo: return oneway ? .blank : .served(Reply(services.varlinkInfo()))
                case .getInterfaceDescription(let interface):
                    let description = try VarlinkInterfaces.description(of: interface)
                    return oneway ? .blank : .served(Reply(parameters: .object([("description", .string(description))])))
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
            return .admitted(Call(command: command, more: request.more, peer: peer, received: received, oneway: oneway))
        } catch {
            let refusal = reply(for: error, method: method)
            services.metrics.request(method, error: refusal.error, since: received)
            return oneway ? .blank : .refused(refusal)
        }
    }

    /// Starts an admitted call without waiting for anything.
    ///
    /// `committed` is called on the committing thread once a change handed to its group
    /// commit is durably committed or has failed (see ``Committed``); it must return at once.
    func start(_ call: Call, committed: @escaping @Sendable (Committed) -> Void) -> Start {
        // A group commit's answer is counted where it is made (end(_:_:)).
        let start = startUncounted(call, committed: committed)
        switch start {
        case .answered(let reply): services.metrics.request(call.command.method, error: reply.error, since: call.received)
        case .watch: services.metrics.request(.watch, error: nil, since: call.received)
        case .committing, .task: break
        }
        return start
    }

    /// Counts a request the connection refuses itself with `reply` (`ShuttingDown`,
    /// a watching connection, a request over the size limit) and returns the reply to
    /// write: none for a `oneway` call. `call` is nil when the request could not be read
    /// whole, so its method is unknown.
    func refuse(_ call: Call?, with reply: Reply) -> Reply? {
        services.metrics.request(call?.command.method, error: reply.error, since: call?.received ?? .now)
        return call?.oneway == true ? nil : reply
    }

    private func startUncounted(_ call: Call, committed: @escaping @Sendable (Committed) -> Void) -> Start {
        do {
            switch call.command {
            case .ping: return .answered(Reply())
            case .info: return .answered(Reply(services.info()))
            case .status(nil): return .answered(Reply(services.switching.daemonStatus(for: call.peer.uid)))
            case .watch: return .watch
            case .get, .keys:
                guard let reply = try readAtOnce(call.command) else { return .task }
                return .answered(reply)
            case .set, .delete:
                return try changeAtOnce(call, committed: committed)
            default:
                return .task
            }
        } catch {
            return .answered(reply(for: error, method: call.command.method))
        }
    }

    /// Runs a call that may wait, writing its replies.
    ///
    /// - Throws: ``ClientGone`` only: every other failure becomes an error reply.
    func run(_ call: Call, writer: ReplyWriter) async throws(ClientGone) {
        let (method, metrics) = (call.command.method, services.metrics)
        do {
            try await perform(call, writer: writer)
            metrics.request(method, error: nil, since: call.received)
        } catch let error as ClientGone {
            metrics.request(method, outcome: "ClientGone", since: call.received)
            throw error
        } catch {
            let failure = reply(for: error, method: method)
            metrics.request(method, error: failure.error, since: call.received)
            try await writer.send(failure)
        }
    }

    /// The error reply for `error`: the one place errors get their wire names.
    func reply(for error: any Error, method: Method?) -> Reply {
        ErrorMapping.reply(for: error, method: method, logger: logger)
    }

    /// Checks `need` for `peer` against the policy in force; a refusal is logged with the uid.
    func check(_ need: AccessPolicy.Need, for method: Method, peer: PeerCredentials) throws {
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

    private func perform(_ call: Call, writer: ReplyWriter) async throws {
        switch call.command {
        case .ping:
            try await writer.send(Reply())
        case .info:
            try await writer.send(Reply(services.info()))
        case .status(let account):
            try await status(account, peer: call.peer, writer: writer)
        case .list(let details):
            try await list(details: details, peer: call.peer, writer: writer)
        case .switchAccount(let account, let create):
            try await switchAccount(account, create: create, uid: call.peer.uid, more: call.more, writer: writer)
        case .migrate(let target, let rollout):
            try await migrate(target, rollout: rollout, more: call.more, writer: writer)
        case .export(let account, let format):
            try await export(account, format: format, writer: writer)
        case .verify(let account):
            try await writer.send(Reply(VerifyResult(try await services.maintenance.verify(account))))
        case .plan(let account):
            try await writer.send(Reply(PlanReply(try await services.maintenance.plan(account))))
        case .snapshots(let account):
            try await snapshots(account, writer: writer)
        case .restore(let account, let snapshot, let at, let reclaim):
            if let at {
                try await restore(account, at: at, reclaim: reclaim, writer: writer)
            } else {
                try await restore(account, snapshot: snapshot, reclaim: reclaim, writer: writer)
            }
        case .snapshot(let account, let label):
            try await writer.send(Reply(SnapshotEntry(try await services.maintenance.snapshot(account, label: label))))
        case .remove(let account, let purge, let handoff):
            try await remove(account, purge: purge, handoff: handoff, writer: writer)
        case .get, .keys:
            try await writer.send(try await read(call.command))
        case .set, .delete:
            try await writer.send(try await change(call.command))
        case .metrics:
            let services = services
            // The replication gauges, read now (through the shared look-up, within its deadline).
            if services.replication.settings.current != nil {
                services.metrics.replication(try await services.maintenance.replication())
            }
            let text = try await services.pool.run { services.metricsText() }
            try await writer.send(Reply(MetricsReply(text: metricsText(text, for: call.peer))))
        case .replication:
            try await writer.send(Reply(try await services.maintenance.replication(include: readable(by: call.peer))))
        case .pull(let account, let replica):
            try await writer.send(Reply(try await services.maintenance.pull(account, replica: replica)))
        case .importAccount(let account, let path, let rebind):
            try await writer.send(Reply(try await services.maintenance.importFile(account, path: path, rebind: rebind, caller: call.peer)))
        case .query(let account, let statement, let maxRows):
            try await query(account, statement, maxRows: maxRows, more: call.more, writer: writer)
        case .execute(let account, let statements):
            try await execute(account, statements, writer: writer)
        case .watch:
            throw ProtocolError(.invalidRequest, "Watch is handled by the connection")
        }
    }
}
