@testable import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import AccountdDaemon

/// A group commit hands its answers to each event loop once per commit (``LoopAnswers``):
/// every writer of the loop still gets its own reply, once, after the commit that holds its change.
@Suite struct LoopAnswersTests {
    @Test func everyWriterOfOneLoopIsAnsweredOnceAfterItsCommit() async throws {
        let dir = TestDirectory()
        try await DaemonParts.with(dataRoot: dir.path, namespaces: DispatcherTests.namespaces) { daemon in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let dispatcher = daemon.dispatcher
            let count = 24
            let outputs = (0..<count).map { _ in DispatcherTests.Capture() }
            let endings = Mutex([Int](repeating: 0, count: count))
            // All sent in one turn of the loop: the commits answer several of them at a time.
            let (responses, ended) = try await loop.submit { () -> ([Dispatcher.Response], [EventLoopFuture<Void>]) in
                var responses: [Dispatcher.Response] = []
                var ended: [EventLoopFuture<Void>] = []
                for index in 0..<count {
                    let writer = ConnectionWriter(loop: loop, output: outputs[index])
                    let done = loop.makePromise(of: Void.self)
                    writer.requestEnded = {
                        writer.flush()
                        let first = endings.withLock { endings in
                            endings[index] += 1
                            return endings[index] == 1
                        }
                        if first { done.succeed() }
                    }
                    responses.append(dispatcher.respond(to: Array("set switch key\(index) \(index)".utf8), peer: DispatcherTests.admin, framing: .line, writer: writer))
                    ended.append(done.futureResult)
                }
                return (responses, ended)
            }.get()
            #expect(responses == [Dispatcher.Response](repeating: .running, count: count), "each Set goes to the device table's group commit")
            for future in ended { try await future.get() }
            // A late second answer would land here.
            try await Task.sleep(for: .milliseconds(50))
            #expect(endings.withLock { $0 } == [Int](repeating: 1, count: count), "each request ends once")
            for (index, output) in outputs.enumerated() {
                let replies = try output.replies()
                #expect(replies.count == 1 && replies.first?.error == nil, "writer \(index): \(replies.map { $0.encoded() })")
            }
            // Answered means committed: every value is in the file, read by a connection of its own.
            let file = try PreferenceDatabase(path: dir.path + "/device.sqlite", table: "prefs", create: false, run: { $0() })
            #expect((0..<count).map { file.get("switch", "key\($0)") } == (0..<count).map { Optional(JSONValue.int(Int64($0))) })
            await file.close()
        }
    }
}
