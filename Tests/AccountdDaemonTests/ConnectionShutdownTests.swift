@testable import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import AccountdDaemon

/// Shutdown while a request runs, on a connection's pipeline in a `NIOAsyncTestingChannel`
/// (whose event loop takes work from other threads, as the blocking pool's do). The
/// running request is a `Verify` of an account whose lock the test holds, so it runs for as
/// long as the test wants.
@Suite struct ConnectionShutdownTests {
    static let ping = "ping\n"
    static let info = #"{"method":"io.accountd.Info"}"#

    @Test func aRequestBegunWhileTheRunningOneFinishesDuringShutdownGetsShuttingDown() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try await AsyncPipeline(daemon)
            let running = try await RunningVerify(daemon, pipe)
            try await pipe.shutDown()
            // The client begins another request after shutdown began, before the Verify is answered.
            try await pipe.send("pi")
            running.finish()
            let errors = try await pipe.repliesUntilClosed().map(\.error)
            #expect(errors == [.accountNotFound, .shuttingDown], "\(errors)")
        }
    }

    @Test func everyRequestReadBehindTheRunningOneDuringShutdownGetsShuttingDownInOrder() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try await AsyncPipeline(daemon)
            let running = try await RunningVerify(daemon, pipe, then: Self.ping)
            try await pipe.shutDown()
            // The blank line is no request and gets no reply.
            try await pipe.send(Self.info + "\n" + "\n" + Self.ping + "pi")
            running.finish()
            let errors = try await pipe.repliesUntilClosed().map(\.error)
            #expect(errors == [.accountNotFound, .shuttingDown, .shuttingDown, .shuttingDown, .shuttingDown], "\(errors)")
        }
    }
}

/// A `Verify nobody` sent on `pipe` and kept waiting for the account's lock until ``finish()``.
struct RunningVerify {
    private let hold: AccountHold

    /// Sends the Verify (and `then` in the same read) once the test holds the account, and
    /// returns once the Verify waits in the lock's queue.
    init(_ daemon: DaemonParts, _ pipe: AsyncPipeline, then more: String = "") async throws {
        let store = daemon.dispatcher.services.stores.current
        let account = try AccountName("nobody")
        hold = try await store.hold(account)
        try await pipe.send("verify nobody\n" + more)
        try await pipe.runUntil("the Verify waits for account nobody") { store.locks.waiting(for: account) == 1 }
    }

    /// Lets the Verify run: it answers `AccountNotFound`.
    func finish() { hold.release() }
}

/// A connection's handlers in a `NIOAsyncTestingChannel`, and what went out of it.
final class AsyncPipeline: Sendable {
    let channel = NIOAsyncTestingChannel()

    init(_ daemon: DaemonParts, maximumRequestBytes: Int = 1 << 20) async throws {
        let channel = channel
        try await channel.testingEventLoop.executeInContext {
            let peer = PeerCredentials(pid: 1, uid: getuid(), gid: getgid())
            try channel.pipeline.syncOperations.addHandlers(
                RequestFramer(maximumRequestBytes: maximumRequestBytes),
                Connection(
                    peer: peer, dispatcher: daemon.dispatcher, hub: daemon.hub, maximumRequestBytes: maximumRequestBytes,
                    logger: Logger(label: "test")))
        }
        try await channel.connect(to: SocketAddress(unixDomainSocketPath: "/accountd-test")).get()
    }

    /// Hands `text` to the pipeline as one read.
    func send(_ text: String) async throws {
        try await channel.writeInbound(ByteBuffer(string: text))
        let channel = channel
        try await channel.testingEventLoop.executeInContext { channel.pipeline.fireChannelReadComplete() }
    }

    /// Tells the connection that the daemon begins to stop, as ``SocketServer`` does.
    func shutDown() async throws {
        let channel = channel
        try await channel.testingEventLoop.executeInContext {
            channel.pipeline.fireUserInboundEventTriggered(Connection.ShutdownRequested())
        }
    }

    /// Runs the event loop's work until `condition` holds, failing after 20 s.
    func runUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw DispatcherTests.Failure("not within 20 s: \(what)") }
            await channel.testingEventLoop.run()
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Every reply written, once the connection has closed.
    func repliesUntilClosed() async throws -> [Reply] {
        try await runUntil("the connection closes") { !channel.isActive }
        var text = ""
        while let buffer = try await channel.readOutbound(as: ByteBuffer.self) {
            text += String(buffer: buffer)
        }
        return try text.split(separator: "\n").map { try Reply.decode(Array($0.utf8)) }
    }
}
