import Synchronization
import Testing

@testable import AccountdClient

/// The bounded queue between the task that reads the socket and the client that takes
/// replies: order, the bound, and how it ends.
@Suite struct ReplyInboxTests {
    static func read(_ texts: String...) -> [ArraySlice<UInt8>] { texts.map { Array($0.utf8)[...] } }
    static func texts(_ lines: [ArraySlice<UInt8>]?) -> [String]? { lines?.map { String(decoding: $0, as: UTF8.self) } }

    @Test func readsComeOutInOrderThenTheEnd() async throws {
        let inbox = ReplyInbox()
        await inbox.send(Self.read("a", "b"))
        await inbox.send(Self.read("c"))
        inbox.finish()
        #expect(Self.texts(try await inbox.next()) == ["a", "b"])
        #expect(Self.texts(try await inbox.next()) == ["c"])
        #expect(try await inbox.next() == nil)
        #expect(try await inbox.next() == nil)
    }

    @Test func aTakerWaitsForTheNextRead() async throws {
        let inbox = ReplyInbox()
        async let taken = inbox.next()
        // The taker may be waiting already or not yet: either way it gets this read.
        await inbox.send(Self.read("late"))
        #expect(Self.texts(try await taken) == ["late"])
    }

    @Test func theSenderWaitsWhileTheQueueIsFull() async throws {
        let inbox = ReplyInbox()
        for index in 0..<(ReplyInbox.capacity - 1) { await inbox.send(Self.read("\(index)")) }
        let sent = Atomic(0)
        let sender = Task {
            await inbox.send(Self.read("fills"))
            sent.store(1, ordering: .sequentiallyConsistent)
            await inbox.send(Self.read("beyond"))
            sent.store(2, ordering: .sequentiallyConsistent)
        }
        // The send that fills the queue waits until a read is taken, and so does the next.
        for _ in 0..<1000 { await Task.yield() }
        #expect(sent.load(ordering: .sequentiallyConsistent) == 0)
        #expect(Self.texts(try await inbox.next()) == ["0"])
        while sent.load(ordering: .sequentiallyConsistent) < 1 { await Task.yield() }
        for _ in 0..<1000 { await Task.yield() }
        #expect(sent.load(ordering: .sequentiallyConsistent) == 1)
        #expect(Self.texts(try await inbox.next()) == ["1"])
        await sender.value
        #expect(sent.load(ordering: .sequentiallyConsistent) == 2)
        var rest: [String] = []
        inbox.finish()
        while let lines = try await inbox.next() { rest += Self.texts(lines) ?? [] }
        #expect(rest == (2..<(ReplyInbox.capacity - 1)).map { "\($0)" } + ["fills", "beyond"])
    }

    @Test func aFailureComesAfterWhatWasQueued() async throws {
        struct Broken: Error {}
        let inbox = ReplyInbox()
        await inbox.send(Self.read("kept"))
        inbox.fail(Broken())
        #expect(Self.texts(try await inbox.next()) == ["kept"])
        await #expect(throws: Broken.self) { try await inbox.next() }
    }

    @Test func theEndWakesAWaitingTakerAndAWaitingSender() async throws {
        let inbox = ReplyInbox()
        async let taken = inbox.next()
        for _ in 0..<100 { await Task.yield() }
        inbox.finish()
        #expect(try await taken == nil)

        let full = ReplyInbox()
        for index in 0..<(ReplyInbox.capacity - 1) { await full.send(Self.read("\(index)")) }
        let sender = Task { await full.send(Self.read("fills")) }
        for _ in 0..<100 { await Task.yield() }
        full.finish()
        await sender.value  // returns: nothing is left waiting on a finished inbox
    }
}
