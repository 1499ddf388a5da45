/// The one writer of a preference table: where it stands, as an explicit state, and what
/// each event makes it do.
///
/// A pure value: it does no I/O, starts nothing and never waits. ``PreferenceDatabase``
/// keeps it in a `Mutex`, feeds it the events (a change arrives, a batch is committed, the
/// gathering timer fires, a close is asked for) and carries out the ``Action`` each
/// returns, outside the lock: commits on the owner's blocking pool, the timer on the
/// owner's clock. At most one batch is committing at any time, so the table has one writer.
struct PreferenceWriter<Item> {
    /// Where the writer stands.
    enum Phase: Equatable {
        /// Nothing queued, nothing committing.
        case idle
        /// Changes are queued; the writer waits for `expected` of them, or for the timer
        /// numbered `timer`, whichever comes first, before it commits.
        case gathering(expected: Int, timer: UInt64)
        /// A commit is handed to the pool or running; changes that arrive queue for the next batch.
        case committing
        /// Closed: its last batch is committed and its connection closed.
        case closed
    }

    /// What the owner does after an event, outside the lock.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Hand a commit to the blocking pool (``PreferenceWriter/nextBatch()`` takes its batch).
        case commit
        /// Start the timer numbered `timer`, to fire after `delay`.
        case gather(timer: UInt64, delay: Duration)
        /// Close the connection, then call ``PreferenceWriter/closed()``; on the blocking pool.
        case finishClose
    }

    /// The longest the writer waits for writers to gather.
    static var longestGather: Duration { .milliseconds(1) }

    private(set) var phase = Phase.idle
    /// The changes waiting for a commit, in arrival order.
    private(set) var queue: [Item] = []
    /// Whether a close was asked for: changes are refused from then on.
    private(set) var closing = false
    /// Transactions begun so far.
    private(set) var transactions = 0
    /// How many writers were active at the end of the last commit (those it answered and
    /// those already waiting), and how long it took: whom the next commit may wait for,
    /// and for how long.
    private var activeWriters = 0
    private var lastCommit = Duration.zero
    private var timers: UInt64 = 0
    /// Whether concurrent changes share a commit (false: one transaction per change).
    let groupCommit: Bool
    /// Whether the owner has a timer to gather with.
    let canGather: Bool

    init(groupCommit: Bool, canGather: Bool) {
        self.groupCommit = groupCommit
        self.canGather = canGather
    }

    /// A change arrives. Nil when the writer is closing: the change is refused.
    mutating func accept(_ item: Item) -> Action? {
        guard !closing else { return nil }
        queue.append(item)
        switch phase {
        case .idle: return start()
        case .gathering(let expected, _) where queue.count >= expected:
            phase = .committing
            return .commit
        case .gathering, .committing, .closed: return Action.none
        }
    }

    /// The timer numbered `timer` fired: the gathering it was started for ends, if it has not yet.
    mutating func timerFired(_ timer: UInt64) -> Action {
        guard case .gathering(_, let current) = phase, current == timer else { return .none }
        phase = .committing
        return .commit
    }

    /// The batch a commit takes: with group commit, every queued change; else the first.
    mutating func nextBatch() -> [Item] {
        precondition(phase == .committing, "a batch was taken while the writer was \(phase)")
        guard !queue.isEmpty else { return [] }
        transactions += 1
        guard groupCommit else { return [queue.removeFirst()] }
        defer { queue.removeAll() }
        return queue
    }

    /// A batch of `count` changes was committed (or failed) in `took`: commit the next at
    /// once, gather for it, close, or rest.
    mutating func committed(_ count: Int, took: Duration) -> Action {
        precondition(phase == .committing, "a commit ended while the writer was \(phase)")
        activeWriters = count + queue.count
        lastCommit = took
        if queue.isEmpty {
            phase = .idle
            return closing ? finish() : .none
        }
        return closing ? .commit : start()
    }

    /// A close is asked for: no change is taken from now on, the queued ones are committed
    /// at once, then the connection is closed.
    mutating func close() -> Action {
        guard !closing else { return .none }
        closing = true
        switch phase {
        case .idle: return finish()
        case .gathering:
            phase = .committing
            return .commit
        case .committing, .closed: return .none
        }
    }

    /// The connection is closed.
    mutating func closed() {
        precondition(phase == .committing && closing, "the writer closed while it was \(phase)")
        phase = .closed
    }

    /// The first batch after a rest, or the next after a commit: waits for the writers that
    /// the last commit answered, or commits at once.
    ///
    /// They usually send their next change within a fraction of a millisecond. Committing
    /// at once would leave them to wait for a whole commit, and the writers would settle
    /// into two groups that take turns, each commit holding half of them. So, while fewer
    /// changes are queued than writers were active, the writer waits for them, for at most
    /// half the last commit's time and never more than ``longestGather``; the change that
    /// completes the count ends the wait at once. Half: the writers already queued wait
    /// for the last ones too, and on a fast disk, where a commit is a few tenths of a
    /// millisecond and the answered writers come back over about as long, waiting for every
    /// straggler (twice the commit, as before) cost more Sets per second than it saved
    /// (docs/PERFORMANCE.md, "A shorter gather"); on a slow disk the wait still reaches
    /// ``longestGather``. A lone writer never waits, and nothing is acknowledged before its
    /// commit either way.
    private mutating func start() -> Action {
        guard groupCommit, canGather, activeWriters > 1, queue.count < activeWriters else {
            phase = .committing
            return .commit
        }
        timers += 1
        phase = .gathering(expected: activeWriters, timer: timers)
        return .gather(timer: timers, delay: min(lastCommit / 2, Self.longestGather))
    }

    private mutating func finish() -> Action {
        phase = .committing
        return .finishClose
    }
}
