import Testing

@testable import AccountdCore

/// The preference table's one writer, as a state: when it commits, gathers, closes and rests.
@Suite struct PreferenceWriterTests {
    typealias Writer = PreferenceWriter<Int>
    typealias Action = Writer.Action

    /// A writer that has committed a batch of `writers` changes in `took`, and rests.
    static func rested(after writers: Int, took: Duration) -> Writer {
        var writer = Writer(groupCommit: true, canGather: true)
        #expect(writer.accept(0) == .commit)
        for index in 1..<writers { #expect(writer.accept(index) == Action.none) }
        #expect(writer.nextBatch() == Array(0..<writers))
        #expect(writer.committed(writers, took: took) == Action.none)
        #expect(writer.phase == .idle)
        return writer
    }

    /// A lone writer commits at once; after a commit that answered three writers, the next
    /// waits for three, for at most half the last commit's time, and the third ends the
    /// wait: its timer, firing late, does nothing.
    @Test func gatheringEndsWhenTheExpectedWritersHaveArrived() {
        var writer = Self.rested(after: 3, took: .microseconds(200))
        #expect(writer.accept(10) == .gather(timer: 1, delay: .microseconds(100)))
        #expect(writer.accept(11) == Action.none)
        #expect(writer.accept(12) == .commit)
        #expect(writer.timerFired(1) == Action.none)
        #expect(writer.nextBatch() == [10, 11, 12])
        #expect(writer.transactions == 2)
    }

    /// The timer ends a gathering that waits for writers who do not come; the wait is never
    /// longer than 1 ms, however slow the last commit was.
    @Test func theTimerEndsAGathering() {
        var writer = Self.rested(after: 4, took: .milliseconds(30))
        #expect(writer.accept(10) == .gather(timer: 1, delay: .milliseconds(1)))
        #expect(writer.timerFired(1) == .commit)
        #expect(writer.nextBatch() == [10])
        // Changes that arrive during a commit wait for it, then gather for the writers it answered.
        #expect(writer.accept(11) == Action.none)
        #expect(writer.committed(1, took: .microseconds(100)) == .gather(timer: 2, delay: .microseconds(50)))
        #expect(writer.accept(12) == .commit)
    }

    /// A close while the writer gathers commits what is queued at once, then closes; a
    /// change after it is refused.
    @Test func aCloseWhileGatheringCommitsAtOnce() {
        var writer = Self.rested(after: 5, took: .microseconds(100))
        #expect(writer.accept(10) == .gather(timer: 1, delay: .microseconds(50)))
        #expect(writer.close() == .commit)
        #expect(writer.accept(11) == nil)
        #expect(writer.timerFired(1) == Action.none)
        #expect(writer.nextBatch() == [10])
        #expect(writer.committed(1, took: .microseconds(100)) == .finishClose)
        writer.closed()
        #expect(writer.phase == .closed)
        #expect(writer.close() == Action.none)
    }

    /// A resting writer closes at once; a committing one closes after its commit.
    @Test func aCloseWaitsForTheCommitInProgress() {
        var resting = Self.rested(after: 1, took: .microseconds(100))
        #expect(resting.close() == .finishClose)

        var writer = Writer(groupCommit: true, canGather: true)
        #expect(writer.accept(1) == .commit)
        #expect(writer.close() == Action.none)
        #expect(writer.nextBatch() == [1])
        #expect(writer.committed(1, took: .microseconds(100)) == .finishClose)
    }

    /// Without group commit, each change has a transaction of its own, one after another,
    /// and nothing ever waits to gather.
    @Test func withoutGroupCommitEachChangeIsCommittedAlone() {
        var writer = Writer(groupCommit: false, canGather: true)
        #expect(writer.accept(1) == .commit)
        #expect(writer.accept(2) == Action.none)
        #expect(writer.accept(3) == Action.none)
        #expect(writer.nextBatch() == [1])
        #expect(writer.committed(1, took: .microseconds(100)) == .commit)
        #expect(writer.nextBatch() == [2])
        #expect(writer.committed(1, took: .microseconds(100)) == .commit)
        #expect(writer.nextBatch() == [3])
        #expect(writer.committed(1, took: .microseconds(100)) == Action.none)
        #expect(writer.transactions == 3)
    }
}
