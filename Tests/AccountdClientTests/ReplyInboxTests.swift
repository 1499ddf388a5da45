import Synchronization
import Testing

@testable import AccountdClient

/// The bounded queue between the connection's event loop and the client that takes
/// replies: order, the bound that pauses reading, and how it ends.
@Suite struct ReplyInboxTests {
    static func read(_ texts: String...) -> [ArraySlice<UInt8>] { texts.map { Array($0.utf8)[...] } }
    static func texts(_ lines: [ArraySlice<UInt8>]?) -> [String]? { lines?.map { String(decoding: $0, as: UTF8.self) } }

    @Test func readsComeOutInOrderThenTheEnd() async throws {
        let inbox = ReplyInbox()
        #expect(inbox.offer(Self.read("a", "b")))
        #expect(inbox.offer(Self.read("c")))
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
        #expect(inbox.offer(Self.read("late")))
        #expect(Self.texts(try await taken) == ["late"])
    }

    @Test func aFullQueuePausesReadingUntilATakeMakesRoom() async throws {
        let inbox = ReplyInbox()
        let resumed = Atomic(0)
        inbox.whenRoom { resumed.add(1, ordering: .sequentiallyConsistent) }
        for index in 0..<(ReplyInbox.capacity - 1) { #expect(inbox.offer(Self.read("\(index)"))) }
        #expect(!inbox.offer(Self.read("fills")))
        // A read that was already under way still gets in; reading stays paused.
        #expect(!inbox.offer(Self.read("beyond")))
        #expect(resumed.load(ordering: .sequentiallyConsistent) == 0)
        #expect(Self.texts(try await inbox.next()) == ["0"])
        // Still full (beyond went in): no resumption yet.
        #expect(resumed.load(ordering: .sequentiallyConsistent) == 0)
        #expect(Self.texts(try await inbox.next()) == ["1"])
        #expect(resumed.load(ordering: .sequentiallyConsistent) == 1)
        #expect(Self.texts(try await inbox.next()) == ["2"])
        #expect(resumed.load(ordering: .sequentiallyConsistent) == 1)
        inbox.finish()
        var rest: [String] = []
        while let lines = try await inbox.next() { rest += Self.texts(lines) ?? [] }
        #expect(rest == (3..<(ReplyInbox.capacity - 1)).map { "\($0)" } + ["fills", "beyond"])
    }

    @Test func aFailureComesAfterWhatWasQueued() async throws {
        struct Broken: Error {}
        let inbox = ReplyInbox()
        #expect(inbox.offer(Self.read("kept")))
        inbox.fail(Broken())
        #expect(Self.texts(try await inbox.next()) == ["kept"])
        await #expect(throws: Broken.self) { try await inbox.next() }
        // Lines offered after the end are dropped, and reading is not paused for them.
        #expect(inbox.offer(Self.read("late")))
    }

    @Test func theEndWakesAWaitingTaker() async throws {
        let inbox = ReplyInbox()
        async let taken = inbox.next()
        for _ in 0..<100 { await Task.yield() }
        inbox.finish()
        #expect(try await taken == nil)
    }
}
