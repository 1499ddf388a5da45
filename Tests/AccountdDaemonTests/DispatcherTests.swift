@testable import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import NIOCore
import Synchronization
import Testing

@testable import AccountdDaemon

/// The dispatcher's three steps (admit, start, run) over real services on a temporary
/// data root: what each request is decoded to, how it is run, and what it replies.
@Suite struct DispatcherTests {
    static let namespaces: [NamespaceDeclaration] = [
        .init(name: "user", scope: .account), .init(name: "switch", scope: .device), .init(name: "memory", scope: .memory),
    ]
    /// The test runs as root or as the daemon's own user: an admin.
    static let admin = PeerCredentials(pid: 0, uid: getuid(), gid: getgid())
    static let stranger = PeerCredentials(pid: 0, uid: 54_321, gid: 54_321)

    @Test func admitDecodesOnceIntoATypedCommand() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: Self.namespaces) { daemon in
            let call = try Self.admitted(daemon, #"{"method":"io.accountd.Switch","parameters":{"account":"alice","create":false},"more":true}"#)
            #expect(call.command == .switchAccount(account: try AccountName("alice"), create: false))
            #expect(call.more)
            #expect(try Self.admitted(daemon, "set user theme \"dark\"").command == .set(PreferenceKey(namespace: "user", key: "theme"), value: "dark"))
            guard case .blank = daemon.dispatcher.admit(Array("   ".utf8), peer: Self.admin) else {
                Issue.record("a blank line is not a request")
                return
            }
        }
    }

    @Test(arguments: [
        ("not json {", ErrorName.methodNotFound),
        (#"{"method":"io.accountd.Nope"}"#, .methodNotFound),
        (#"{"method":"io.accountd.Export","parameters":{"account":"alice"}}"#, .expectedMore),
        (#"{"method":"io.accountd.Switch","parameters":{"account":"../etc"}}"#, .invalidAccountName),
        (#"{"method":"io.accountd.Switch","parameters":{"account":7}}"#, .invalidParameter),
        (#"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"k"}}"#, .invalidValue),
    ])
    func admitRefusesBadRequestsWithTheirWireError(line: String, error: ErrorName) async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let reply = try #require(Self.refusal(daemon, line))
            #expect(reply.error == error, "\(line) -> \(reply.encoded())")
        }
    }

    @Test func theAccessCheckComesBeforeTheParametersAreRead() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            // A bad name from a peer that may not switch at all: PermissionDenied, not InvalidAccountName.
            let reply = try #require(Self.refusal(daemon, "switch ../etc", peer: Self.stranger))
            #expect(reply.error == .permissionDenied, "\(reply.encoded())")
            // Anyone may read.
            _ = try Self.admitted(daemon, "status", peer: Self.stranger)
        }
    }

    @Test func startAnswersFromMemoryAndLeavesWaitingWorkToATask() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: Self.namespaces) { daemon in
            let ping = try Self.started(daemon, "ping")
            guard case .answered(let pong) = ping else { throw Failure("Ping is answered at once, got \(ping)") }
            #expect(pong.error == nil)
            guard case .answered(let status) = try Self.started(daemon, "status") else { throw Failure("Status is answered at once") }
            #expect(try DaemonStatus(parameters: status.parameters) == DaemonStatus(active: nil, state: "idle", version: nil, bundleVersion: 3))
            guard case .task = try Self.started(daemon, "switch alice") else { throw Failure("Switch needs a task") }
            guard case .task = try Self.started(daemon, "status alice") else { throw Failure("an account's Status needs a task") }
            guard case .watch = try Self.started(daemon, #"{"method":"io.accountd.Watch","more":true}"#) else {
                throw Failure("Watch belongs to the connection")
            }
            // A per-account namespace with no active account: refused at once.
            guard case .answered(let refused) = try Self.started(daemon, "get user theme") else { throw Failure("answered at once") }
            #expect(refused.error == .noActiveAccount)
        }
    }

    @Test func memoryAndDeviceChangesAreAnsweredWithoutATaskAndReadBack() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: Self.namespaces) { daemon in
            guard case .answered(let set) = try Self.started(daemon, "set memory mode 3") else { throw Failure("a memory Set is answered at once") }
            #expect(set.error == nil)
            let call = try Self.admitted(daemon, #"set switch last "alice""#)
            var start: Dispatcher.Start?
            let committed = await withCheckedContinuation { (continuation: CheckedContinuation<Dispatcher.Committed?, Never>) in
                start = daemon.dispatcher.start(call) { continuation.resume(returning: $0) }
                if case .committing? = start { return }
                continuation.resume(returning: nil)
            }
            guard case .committing? = start, let committed else {
                throw Failure("a device Set goes to its group commit, got \(String(describing: start))")
            }
            guard case .answered(let reply) = daemon.dispatcher.end(call, committed) else { throw Failure("the commit answered") }
            #expect(reply.error == nil, "\(reply.encoded())")
            for (line, value) in [("get memory mode", JSONValue.int(3)), ("get switch last", "alice")] {
                guard case .answered(let got) = try Self.started(daemon, line) else { throw Failure("\(line) is answered at once") }
                #expect(try PreferenceValue(parameters: got.parameters).value == value)
            }
            #expect(FileManager.default.fileExists(atPath: dir.path + "/device.sqlite"))
        }
    }

    @Test func runSwitchesAndAnAccountPreferenceFollowsTheActiveAccount() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: Self.namespaces) { daemon in
            let switched = try await Self.run(daemon, "switch alice")
            let result = try SwitchResult(parameters: try #require(switched.last).parameters)
            #expect(result.action == "created" && result.account == "alice" && result.version == 3)
            #expect(FileManager.default.fileExists(atPath: dir.path + "/accounts/alice.sqlite"))
            // The account's table is not open yet: the Set runs in a task, which opens it.
            let set = try await Self.run(daemon, #"set user theme "dark""#)
            #expect(set.map(\.error) == [nil], "\(set.map { $0.encoded() })")
            let got = try await Self.run(daemon, "get user theme alice")
            #expect(try PreferenceValue(parameters: try #require(got.last).parameters).value == "dark")
            let missing = try await Self.run(daemon, "get user nothing")
            #expect(missing.last?.error == .keyNotFound)
            let notFound = try await Self.run(daemon, "verify nobody")
            #expect(notFound.last?.error == .accountNotFound)
        }
    }

    @Test func requestsWaitingForABusyAccountHoldNoPoolThread() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: Self.namespaces) { daemon in
            _ = try await Self.run(daemon, "switch alice")
            let store = daemon.dispatcher.services.stores.current
            let alice = try AccountName("alice")
            let hold = try await store.hold(alice)
            // Twice as many requests for alice as the pool has threads (2) queue for her lock.
            let waiting = (0..<4).map { _ in Task { try await Self.run(daemon, "verify alice") } }
            let deadline = ContinuousClock.now + .seconds(20)
            while store.locks.waiting(for: alice) < 4 && ContinuousClock.now < deadline { await Task.yield() }
            #expect(store.locks.waiting(for: alice) == 4)
            // Another account is served meanwhile: the waiters hold no pool thread.
            let bob = try await Self.run(daemon, "switch bob")
            #expect(try SwitchResult(parameters: try #require(bob.last).parameters).action == "created", "\(bob.map { $0.encoded() })")
            hold.release()
            for task in waiting {
                let replies = try await task.value
                #expect(try VerifyResult(parameters: try #require(replies.last).parameters).healthy, "\(replies.map { $0.encoded() })")
            }
        }
    }

    // MARK: Helpers

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func admitted(_ daemon: DaemonParts, _ line: String, peer: PeerCredentials = admin) throws -> Dispatcher.Call {
        guard case .admitted(let call) = daemon.dispatcher.admit(Array(line.utf8), peer: peer) else {
            throw Failure("\(line) was not admitted")
        }
        return call
    }

    static func refusal(_ daemon: DaemonParts, _ line: String, peer: PeerCredentials = admin) -> Reply? {
        guard case .refused(let reply) = daemon.dispatcher.admit(Array(line.utf8), peer: peer) else { return nil }
        return reply
    }

    static func started(_ daemon: DaemonParts, _ line: String) throws -> Dispatcher.Start {
        daemon.dispatcher.start(try admitted(daemon, line)) { _ in }
    }

    /// Runs `line` as a connection's task does and returns its replies.
    static func run(_ daemon: DaemonParts, _ line: String) async throws -> [Reply] {
        let transport = Capture()
        let writer = ReplyWriter(transport)
        try await daemon.dispatcher.run(try admitted(daemon, line), writer: writer)
        try await writer.flush()
        return try transport.replies()
    }

    /// Keeps what is written, as a client would read it.
    final class Capture: ReplyTransport {
        private let bytes = Mutex<[UInt8]>([])

        func write(_ buffer: ByteBuffer) async throws(ClientGone) { bytes.withLock { $0 += buffer.readableBytesView } }
        func writeBlocking(_ buffer: ByteBuffer) throws(ClientGone) { bytes.withLock { $0 += buffer.readableBytesView } }

        func replies() throws -> [Reply] {
            try bytes.withLock { $0 }.split(separator: UInt8(ascii: "\n")).map { try Reply.decode($0) }
        }
    }
}
