import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import AccountdDaemon

/// The connection's pipeline (``RequestFramer`` then ``Connection``) in an
/// `EmbeddedChannel`, with the real dispatcher, answering requests that need no store
/// (Ping, Info, bad input, and a Switch to an invalid name, which runs in a task).
@Suite struct ConnectionPipelineTests {
    static let ping = "ping\n"
    static let info = #"{"method":"io.accountd.Info"}"#

    @Test func repliesComeInRequestOrderWhateverTheReadsSplit() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon)
            try pipe.send("pi")
            try pipe.send("ng\nnot a request\n" + Self.info.prefix(10))
            try pipe.send(Self.info.dropFirst(10) + "\r\nping\n")
            let replies = try pipe.replies()
            #expect(replies.map { $0.error == nil } == [true, false, true, true], "\(replies.map(\.error))")
            #expect(replies.count == 4 && replies[2].parameters != .object([]), "the third reply is Info's")
            #expect(pipe.channel.isActive)
        }
    }

    @Test func aHalfClosedClientGetsItsUnterminatedLastRequestAnsweredThenTheConnectionCloses() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon)
            try pipe.send(Self.ping + Self.info)
            #expect(try pipe.replies().map(\.error) == [nil], "the unterminated Info was answered before the end of input")
            pipe.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            let last = try pipe.replies()
            #expect(last.count == 1 && last.first?.error == nil && last.first?.parameters != .object([]), "\(last)")
            #expect(!pipe.channel.isActive)
        }
    }

    @Test func anOversizedLineIsAnsweredWithRequestTooLargeAfterTheRequestsBeforeItThenTheConnectionCloses() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, maximumRequestBytes: 64)
            try pipe.send(Self.ping + String(repeating: "x", count: 100) + "\n" + Self.ping)
            let replies = try pipe.replies()
            #expect(replies.map(\.error) == [nil, .requestTooLarge])
            #expect(!pipe.channel.isActive)
        }
    }

    @Test func shutdownAnswersABegunRequestWithShuttingDownAndCloses() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon)
            try pipe.send(Self.ping + "pi")
            pipe.channel.pipeline.fireUserInboundEventTriggered(Connection.ShutdownRequested())
            #expect(try pipe.replies().map(\.error) == [nil, .shuttingDown])
            #expect(!pipe.channel.isActive)
        }
    }

    /// A request refused by the connection's state is refused before it is decoded or its
    /// access checked: during shutdown, a line that is no request, and one that would be
    /// refused for its parameters, get `ShuttingDown` like any other, counted under `unknown`.
    @Test func aRequestRefusedByStateIsRefusedBeforeItIsDecoded() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon)
            let turn = ConnectionStateMachine.requestsPerTurn
            try pipe.send(String(repeating: Self.ping, count: turn) + "not a request\n" + "switch ../etc\n" + Self.ping)
            #expect(try pipe.replies(runningTheLoop: false).count == turn, "the connection yields after a turn")
            pipe.channel.pipeline.fireUserInboundEventTriggered(Connection.ShutdownRequested())
            #expect(try pipe.replies().map(\.error) == [.shuttingDown, .shuttingDown, .shuttingDown])
            #expect(!pipe.channel.isActive)
            let text = daemon.metrics.registry.emitToString()
            #expect(text.contains(#"accountd_requests_total{method="unknown",outcome="ShuttingDown"} 3"#), "\(text)")
        }
    }

    @Test func shutdownClosesAnIdleConnectionWithoutAReply() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon)
            pipe.channel.pipeline.fireUserInboundEventTriggered(Connection.ShutdownRequested())
            #expect(try pipe.replies().isEmpty)
            #expect(!pipe.channel.isActive)
        }
    }

    @Test func aClientThatDoesNotReadItsRepliesIsNeitherAnsweredNorReadFromUntilItDoes() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon)
            pipe.channel.isWritable = false
            try pipe.send(Self.ping + Self.ping)
            pipe.channel.read()
            #expect(try pipe.replies().isEmpty)
            #expect(pipe.reads.count == 0, "read while the client did not read its replies")
            pipe.channel.isWritable = true
            pipe.channel.pipeline.fireChannelWritabilityChanged()
            #expect(try pipe.replies().map(\.error) == [nil, nil])
            #expect(pipe.reads.count == 1, "the held read was not released")
        }
    }

    @Test func aConnectionYieldsAfterATurnsWorthOfRequestsThenCarriesOn() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon)
            let count = ConnectionStateMachine.requestsPerTurn + 8
            try pipe.send(String(repeating: Self.ping, count: count))
            #expect(try pipe.replies(runningTheLoop: false).count == ConnectionStateMachine.requestsPerTurn)
            #expect(try pipe.replies().count == 8)
        }
    }

    /// The idle timeout counts from the last read or write: activity keeps the connection
    /// open past it, and a whole timeout without any closes it.
    @Test func theIdleTimerClosesAConnectionOnlyAfterAWholeTimeoutWithoutActivity() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, idleTimeout: .seconds(10))
            let loop = pipe.channel.embeddedEventLoop
            loop.advanceTime(by: .seconds(6))
            try pipe.send(Self.ping)
            #expect(try pipe.replies().count == 1)
            loop.advanceTime(by: .seconds(6))  // 12 s since the start, 6 since the ping
            #expect(pipe.channel.isActive, "the ping 6 s ago keeps it open")
            loop.advanceTime(by: .seconds(3))
            #expect(pipe.channel.isActive)
            loop.advanceTime(by: .seconds(2))  // 11 s since the ping
            loop.run()
            #expect(!pipe.channel.isActive, "a whole timeout without activity closes it")
        }
    }
}

/// An `EmbeddedChannel` with a connection's handlers, and what went out of it.
final class PipelineUnderTest {
    let channel = EmbeddedChannel()
    let reads = ReadCounter()

    let framing: Framing

    /// The pipeline of a connection on the socket of `framing`, as `SocketServer` builds it.
    init(
        _ daemon: DaemonParts, maximumRequestBytes: Int = 1 << 20, framing: Framing = .line, uid: uid_t = getuid(),
        idleTimeout: TimeAmount? = nil
    ) throws {
        self.framing = framing
        let peer = PeerCredentials(pid: 1, uid: uid, gid: getgid())
        try channel.pipeline.syncOperations.addHandler(reads)
        if framing == .varlink {
            try channel.pipeline.syncOperations.addHandler(ReplyTerminator())
        }
        try channel.pipeline.syncOperations.addHandlers(
            RequestFramer(maximumRequestBytes: maximumRequestBytes, framing: framing),
            Connection(
                peer: peer, dispatcher: daemon.dispatcher, hub: daemon.hub, maximumRequestBytes: maximumRequestBytes,
                framing: framing, idleTimeout: idleTimeout, logger: Logger(label: "test")))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/accountd-test")).wait()
    }

    deinit { _ = try? channel.finish() }

    /// Hands `text` to the pipeline as one read.
    func send(_ text: some StringProtocol) throws {
        try channel.writeInbound(ByteBuffer(string: String(text)))
        channel.pipeline.fireChannelReadComplete()
    }

    /// The replies written since the last call, after running what the event loop has queued
    /// and a yielded turn's resumption (a timer, ``Connection/turnPause``).
    func replies(runningTheLoop: Bool = true) throws -> [Reply] {
        if runningTheLoop {
            channel.embeddedEventLoop.run()
            channel.embeddedEventLoop.advanceTime(by: Connection.turnPause)
        }
        var text = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            text += String(buffer: buffer)
        }
        let terminator = Character(Unicode.Scalar(framing.terminator))
        #expect(text.isEmpty || text.last == terminator, "a reply is not ended by its framing's terminator: \(text.suffix(40))")
        return try text.split(separator: terminator).map { try Reply.decode(Array($0.utf8)) }
    }
}

/// Counts the reads that reach the head of the pipeline.
final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private(set) var count = 0

    func read(context: ChannelHandlerContext) {
        count += 1
        context.read()
    }
}
