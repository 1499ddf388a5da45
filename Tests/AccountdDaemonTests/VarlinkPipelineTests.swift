import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import AccountdDaemon

/// The varlink socket's pipeline (``ReplyTerminator``, ``RequestFramer`` and
/// ``Connection`` with ``Framing/varlink``) in an `EmbeddedChannel`, with the real
/// dispatcher: NUL-terminated messages in and out, `oneway`, `upgrade`, and
/// `org.varlink.service`.
@Suite struct VarlinkPipelineTests {
    static let ping = #"{"method":"io.accountd.Ping"}"# + "\0"

    @Test func messagesSplitAcrossReadsAreJoinedAndEveryReplyEndsInNUL() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, framing: .varlink)
            try pipe.send(#"{"method":"io.accountd.Pi"#)
            try pipe.send(#"ng"}"# + "\0" + #"{"method":"org.varlink.service.GetInfo"}"#)
            #expect(try pipe.replies().map(\.error) == [nil], "GetInfo has no NUL yet")
            try pipe.send("\0" + #"{"method":"io.accountd.Info"}"# + "\0")
            let replies = try pipe.replies()
            #expect(replies.map(\.error) == [nil, nil], "\(replies.map { $0.encoded() })")
            let info = try VarlinkInfo(parameters: try #require(replies.first).parameters)
            #expect(info.interfaces == ["org.varlink.service", "io.accountd"])
            #expect(info.vendor == "accountd" && info.version == AccountdVersion.current)
            #expect(replies.last?.parameters["product"] == "accountd")
        }
    }

    @Test func aNewlineDoesNotEndAMessage() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, framing: .varlink)
            try pipe.send(#"{"method":"io.accountd.Ping"}"# + "\n")
            #expect(try pipe.replies().isEmpty)
            try pipe.send("\0")
            #expect(try pipe.replies().map(\.error) == [nil])
        }
    }

    @Test func inlineTextIsRefusedAsInvalidRequest() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, framing: .varlink)
            try pipe.send("ping\0status\0" + Self.ping)
            let replies = try pipe.replies()
            #expect(replies.map(\.error) == [.invalidRequest, .invalidRequest, nil])
            #expect(replies.first?.message?.contains("line socket") == true, "\(replies.first?.encoded() ?? "")")
            #expect(pipe.channel.isActive)
        }
    }

    @Test func anOversizedMessageIsAnsweredWithRequestTooLargeThenTheConnectionCloses() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, maximumRequestBytes: 64, framing: .varlink)
            try pipe.send(Self.ping + #"{"method":"io.accountd.Ping","parameters":{"x":""# + String(repeating: "x", count: 100) + "\0" + Self.ping)
            let replies = try pipe.replies()
            #expect(replies.map(\.error) == [nil, .requestTooLarge])
            #expect(!pipe.channel.isActive)
        }
    }

    @Test func aOnewayCallGetsNoReplyNotEvenAnError() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, framing: .varlink)
            try pipe.send(
                #"{"method":"io.accountd.Ping","oneway":true}"# + "\0"
                    + #"{"method":"io.accountd.Status","parameters":{"account":5},"oneway":true}"# + "\0"
                    + #"{"method":"org.varlink.service.GetInfo","oneway":true}"# + "\0"
                    + #"{"method":"io.accountd.Info"}"# + "\0")
            let replies = try pipe.replies()
            #expect(replies.count == 1 && replies.first?.parameters["product"] == "accountd", "\(replies.map { $0.encoded() })")
        }
    }

    /// A `oneway` call refused by the connection's state (the daemon stopping) still gets
    /// no reply, though the call is not decoded: only its envelope is read.
    @Test func aOnewayCallRefusedWhileStoppingGetsNoReply() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, framing: .varlink)
            let turn = ConnectionStateMachine.requestsPerTurn
            try pipe.send(
                String(repeating: Self.ping, count: turn) + #"{"method":"io.accountd.Ping","oneway":true}"# + "\0"
                    + #"{"method":"io.accountd.Switch","parameters":{"account":"../etc"},"oneway":true}"# + "\0" + Self.ping)
            #expect(try pipe.replies(runningTheLoop: false).count == turn)
            pipe.channel.pipeline.fireUserInboundEventTriggered(Connection.ShutdownRequested())
            #expect(try pipe.replies().map(\.error) == [.shuttingDown])
            #expect(!pipe.channel.isActive)
        }
    }

    @Test func upgradeIsRefused() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, framing: .varlink)
            try pipe.send(#"{"method":"io.accountd.Ping","upgrade":true}"# + "\0" + Self.ping)
            let replies = try pipe.replies()
            #expect(replies.map(\.error) == [.invalidRequest, nil])
            #expect(replies.first?.message?.contains("upgrade") == true)
        }
    }

    @Test func varlinkErrorsHaveTheirStandardNamesAndParameters() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, framing: .varlink)
            try pipe.send(
                #"{"method":"io.accountd.Explode"}"# + "\0"
                    + #"{"method":"com.example.Thing"}"# + "\0"
                    + #"{"method":"io.accountd.Status","parameters":{"acount":"alice"}}"# + "\0"
                    + #"{"method":"io.accountd.List"}"# + "\0"
                    + #"{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"com.example"}}"# + "\0")
            let replies = try pipe.replies()
            #expect(replies.map(\.error) == [.methodNotFound, .interfaceNotFound, .invalidParameter, .expectedMore, .interfaceNotFound])
            #expect(replies[0].parameters["method"] == "io.accountd.Explode")
            #expect(replies[1].parameters["interface"] == "com.example")
            #expect(replies[2].parameters["parameter"] == "acount")
            #expect(replies[4].parameters["interface"] == "com.example")
        }
    }

    @Test func getInterfaceDescriptionServesTheRepositorysInterfaceFile() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon, framing: .varlink)
            try pipe.send(
                #"{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"io.accountd"}}"# + "\0"
                    + #"{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"org.varlink.service"}}"# + "\0")
            let replies = try pipe.replies()
            let file = try String(contentsOfFile: Repository.root + "/io.accountd.varlink", encoding: .utf8)
            #expect(replies.first?.parameters["description"]?.stringValue == file)
            #expect(replies.last?.parameters["description"]?.stringValue?.contains("interface org.varlink.service") == true)
        }
    }

    @Test func theLineSocketIgnoresOnewayAsBefore() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path) { daemon in
            let pipe = try PipelineUnderTest(daemon)
            try pipe.send(#"{"method":"io.accountd.Ping","oneway":true}"# + "\n" + #"{"method":"org.varlink.service.GetInfo"}"# + "\n")
            #expect(try pipe.replies().map(\.error) == [nil, .methodNotFound])
        }
    }
}
