@testable import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import AccountdDaemon

/// The one responder over real services on a temporary data root: what each request is
/// decoded to, how it runs, and what it replies.
@Suite struct DispatcherTests {
    static let namespaces: [NamespaceDeclaration] = [
        .init(name: "user", scope: .account), .init(name: "switch", scope: .device), .init(name: "memory", scope: .memory),
    ]
    /// The test runs as root or as the daemon's own user: an admin.
    static let admin = PeerCredentials(pid: 0, uid: getuid(), gid: getgid())
    static let stranger = PeerCredentials(pid: 0, uid: 54_321, gid: 54_321)

    @Test func decodingReadsALineOnceIntoATypedCommand() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: Self.namespaces) { daemon in
            let call = try Self.decoded(daemon, #"{"method":"io.accountd.Switch","parameters":{"account":"alice","create":false},"more":true}"#)
            #expect(call.command == .switchAccount(account: try AccountName("alice"), create: false))
            #expect(call.more)
            #expect(try Self.decoded(daemon, "set user theme \"dark\"").command == .set(PreferenceKey(namespace: "user", key: "theme"), value: "dark"))
            guard case .blank = daemon.dispatcher.decode(Array("   ".utf8), peer: Self.admin, framing: .line) else {
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
    func badRequestsAreRefusedWithTheirWireError(line: String, error: ErrorName) async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let reply = try #require(try await Self.refusal(daemon, line))
            #expect(reply.error == error, "\(line) -> \(reply.encoded())")
        }
    }

    @Test func theAccessCheckComesBeforeTheParametersAreRead() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            // A bad name from a peer that may not switch at all: PermissionDenied, not InvalidAccountName.
            let reply = try #require(try await Self.refusal(daemon, "switch ../etc", peer: Self.stranger))
            #expect(reply.error == .permissionDenied, "\(reply.encoded())")
            // Anyone may read.
            _ = try Self.decoded(daemon, "status", peer: Self.stranger)
        }
    }

    @Test func memoryAnswersAtOnceAndWaitingWorkRunsOn() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: Self.namespaces) { daemon in
            let ping = try await Self.respond(daemon, "ping")
            #expect(ping.response == .answered && ping.replies.map(\.error) == [nil], "\(ping)")
            let status = try await Self.respond(daemon, "status")
            #expect(status.response == .answered)
            #expect(try DaemonStatus(parameters: try #require(status.replies.first).parameters) == DaemonStatus(active: nil, state: "idle", version: nil, bundleVersion: 3))
            // A per-account namespace with no active account: refused at once.
            let refused = try await Self.respond(daemon, "get user theme")
            #expect(refused.response == .answered && refused.replies.map(\.error) == [.noActiveAccount])
            #expect(try await Self.respond(daemon, "switch alice").response == .running, "Switch runs in a task")
            #expect(try await Self.respond(daemon, "status alice").response == .running, "an account's Status runs in a task")
            let watch = try await Self.respond(daemon, #"{"method":"io.accountd.Watch","more":true}"#)
            #expect(watch.response == .watching && watch.replies.isEmpty, "Watch belongs to the connection")
        }
    }

    /// A Get of a large value and a Keys of long keys are made on the pool, not on the event
    /// loop that every connection shares (hostile24 F1), and come back whole; small ones are
    /// still answered at once.
    @Test func largeGetAndKeysRepliesAreMadeOnThePool() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: Self.namespaces) { daemon in
            let numbers = (0..<20_000).map(String.init).joined(separator: ",")
            #expect(try await Self.run(daemon, "set memory big [\(numbers)]").map(\.error) == [nil])
            #expect(try await Self.run(daemon, "set memory small [1,2,3]").map(\.error) == [nil])
            let small = try await Self.respond(daemon, "get memory small")
            #expect(small.response == .answered)
            let large = try await Self.respond(daemon, "get memory big")
            #expect(large.response == .running, "a 100 KB value is encoded on the pool")
            let value = try PreferenceValue(parameters: try #require(large.replies.first).parameters).value
            #expect(value.arrayValue?.count == 20_000 && value.arrayValue?.last == .int(19_999))

            #expect(try await Self.respond(daemon, "keys memory").response == .answered, "two short keys")
            let long = String(repeating: "k", count: 900)
            for index in 0..<80 { #expect(try await Self.run(daemon, "set memory \(long)\(index) 1").map(\.error) == [nil]) }
            let keys = try await Self.respond(daemon, "keys memory")
            #expect(keys.response == .running, "82 keys of 72 KB are sorted and encoded on the pool")
            let listed = try KeysReply(parameters: try #require(keys.replies.first).parameters).keys
            #expect(listed.count == 82 && listed == listed.sorted())
        }
    }

    /// Whether a value fits a size is found without walking all of it, and agrees with its text.
    @Test func aValueFitsWithinAboutItsTextsLength() {
        let text = JSONValue.array((0..<100).map { .string("item \($0)") })
        let length = text.serialized().utf8.count
        #expect(text.fits(within: length))
        #expect(!text.fits(within: length / 2))
        #expect(JSONValue.object([("a", .null)]).fits(within: 16))
        #expect(!JSONValue.string(String(repeating: "x", count: 100)).fits(within: 50))
    }

    @Test func memoryAndDeviceChangesAreAnsweredWithoutATaskAndReadBack() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: Self.namespaces) { daemon in
            let memory = try await Self.respond(daemon, "set memory mode 3")
            #expect(memory.response == .answered && memory.replies.map(\.error) == [nil], "a memory Set is answered at once")
            let device = try await Self.respond(daemon, #"set switch last "alice""#)
            #expect(device.response == .running && device.replies.map(\.error) == [nil], "a device Set goes to its group commit: \(device)")
            for (line, value) in [("get memory mode", JSONValue.int(3)), ("get switch last", "alice")] {
                let got = try await Self.respond(daemon, line)
                #expect(got.response == .answered, "\(line) is answered at once")
                #expect(try PreferenceValue(parameters: try #require(got.replies.first).parameters).value == value)
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

    static func decoded(_ daemon: DaemonParts, _ line: String, peer: PeerCredentials = admin) throws -> Dispatcher.Call {
        guard case .call(let call) = daemon.dispatcher.decode(Array(line.utf8), peer: peer, framing: .line) else {
            throw Failure("\(line) was not decoded into a call")
        }
        return call
    }

    /// The error reply to a line refused as it is decoded; nil when it was decoded.
    static func refusal(_ daemon: DaemonParts, _ line: String, peer: PeerCredentials = admin) async throws -> Reply? {
        guard case .refused = daemon.dispatcher.decode(Array(line.utf8), peer: peer, framing: .line) else { return nil }
        return try await respond(daemon, line, peer: peer).replies.last
    }

    /// Hands `line` to the responder as a connection does, on an event loop, and returns how
    /// it ran and its replies, once it has ended.
    static func respond(_ daemon: DaemonParts, _ line: String, peer: PeerCredentials = admin) async throws -> (
        response: Dispatcher.Response, replies: [Reply]
    ) {
        let output = Capture()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let dispatcher = daemon.dispatcher
        let (response, ended) = try await loop.submit { () -> (Dispatcher.Response, EventLoopFuture<Void>) in
            let writer = ConnectionWriter(loop: loop, output: output)
            let ended = loop.makePromise(of: Void.self)
            writer.requestEnded = {
                writer.flush()
                writer.requestEnded = {}
                ended.succeed()
            }
            let response = dispatcher.respond(to: Array(line.utf8), peer: peer, framing: .line, writer: writer)
            if response != .running {
                writer.flush()
                writer.requestEnded = {}
                ended.succeed()
            }
            return (response, ended.futureResult)
        }.get()
        try await ended.get()
        return (response, try output.replies())
    }

    /// Runs `line` and returns its replies.
    static func run(_ daemon: DaemonParts, _ line: String, peer: PeerCredentials = admin) async throws -> [Reply] {
        try await respond(daemon, line, peer: peer).replies
    }

    /// Keeps what is written, as a client would read it.
    final class Capture: ReplyOutput, Sendable {
        private let bytes = Mutex<[UInt8]>([])

        func write(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?) {
            bytes.withLock { $0 += buffer.readableBytesView }
            promise?.succeed()
        }
        var isActive: Bool { true }
        var isGone: @Sendable () -> Bool { { false } }

        func replies() throws -> [Reply] {
            try bytes.withLock { $0 }.split(separator: UInt8(ascii: "\n")).map { try Reply.decode($0) }
        }
    }
}
