import Testing

@testable import AccountdDaemon

/// The connection's lifecycle as a table: from a fresh machine, a run of events, then
/// what the last event asked for and the state it left.
@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine

    /// One event fed to the machine.
    enum Event: Sendable, CustomStringConvertible {
        case request(String)
        /// The client began a request: bytes without their newline.
        case begun
        case tooLarge
        case next(writable: Bool = true)
        /// A turn's worth of requests queued and answered.
        case fullTurn
        case started
        case finished
        case watchStarted
        case resumed
        case beginTurn
        case inputClosed
        case shutdown(writable: Bool = true)
        case idleTimer
        /// The channel closed or failed (a write failed).
        case closed

        static var next: Event { .next() }
        static var shutdown: Event { .shutdown() }

        var description: String {
            switch self {
            case .request(let line): line.count > 16 ? "request of \(line.count) bytes" : "request \(line)"
            case .begun: "begun"
            case .tooLarge: "tooLarge"
            case .next(let writable): writable ? "next" : "next(unwritable)"
            case .fullTurn: "fullTurn"
            case .started: "started"
            case .finished: "finished"
            case .watchStarted: "watchStarted"
            case .resumed: "resumed"
            case .beginTurn: "beginTurn"
            case .inputClosed: "inputClosed"
            case .shutdown(let writable): writable ? "shutdown" : "shutdown(unwritable)"
            case .idleTimer: "idleTimer"
            case .closed: "closed"
            }
        }
    }

    /// What an event answered.
    enum Output: Equatable, Sendable {
        case step(Machine.Step)
        case action(Machine.Action)
        case nothing
    }

    /// A row of the table.
    struct Row: Sendable, CustomTestStringConvertible {
        var events: [Event]
        var output: Output
        var state: Machine.State
        var testDescription: String { events.map(\.description).joined(separator: ", ") }
    }

    static func line(_ text: String) -> [UInt8] { Array(text.utf8) }

    static let rows: [Row] = [
        // A write that fails as a request begins (the writer flushes before a task) closes the
        // connection under it: the request starting, or the Watch, leaves it closed.
        Row(events: [.request("a"), .next, .closed, .started], output: .nothing, state: .closing),
        Row(events: [.request("a"), .next, .closed, .watchStarted], output: .action(.close), state: .closing),
        // Answering in order.
        Row(events: [.request("a"), .next], output: .step(.answer(line("a"))), state: .idle(.open)),
        Row(events: [.request("a"), .request("b"), .next, .next], output: .step(.answer(line("b"))), state: .idle(.open)),
        Row(events: [.next], output: .step(.wait), state: .idle(.open)),
        Row(events: [.request("a"), .next(writable: false)], output: .step(.wait), state: .idle(.open)),
        // A running request holds the ones behind it until it finishes.
        Row(events: [.request("a"), .next, .started, .request("b"), .next], output: .step(.wait), state: .running(.open)),
        Row(
            events: [.request("a"), .next, .started, .request("b"), .finished, .next], output: .step(.answer(line("b"))),
            state: .idle(.open)),
        // Fairness: after a turn's worth, yield; resume where it was.
        Row(events: [.fullTurn, .request("a"), .next], output: .step(.yieldTurn), state: .yielded(resume: .idle(.open))),
        Row(events: [.fullTurn, .request("a"), .next, .resumed, .next], output: .step(.answer(line("a"))), state: .idle(.open)),
        Row(events: [.fullTurn, .request("a"), .beginTurn, .next], output: .step(.answer(line("a"))), state: .idle(.open)),
        Row(
            events: [.request("w"), .next, .watchStarted, .beginTurn, .fullTurn, .request("a"), .next], output: .step(.yieldTurn),
            state: .yielded(resume: .watching)),
        // An oversized line is answered in its turn, then the connection closes.
        Row(events: [.request("a"), .tooLarge, .next], output: .step(.answer(line("a"))), state: .idle(.open)),
        Row(events: [.request("a"), .tooLarge, .next, .next], output: .step(.close(.requestTooLarge)), state: .closing),
        // Half-close: what was sent is answered, then the connection closes.
        Row(events: [.inputClosed], output: .action(.serve), state: .idle(.clientClosed)),
        Row(events: [.inputClosed, .next], output: .step(.close(nil)), state: .closing),
        Row(events: [.request("a"), .inputClosed, .next], output: .step(.answer(line("a"))), state: .idle(.clientClosed)),
        Row(events: [.request("a"), .next, .started, .inputClosed], output: .action(.serve), state: .running(.clientClosed)),
        Row(events: [.request("a"), .next, .started, .inputClosed, .finished, .next], output: .step(.close(nil)), state: .closing),
        // Shutdown: a running request finishes; each request read after it, and a begun
        // one, gets ShuttingDown; then the connection closes.
        Row(events: [.shutdown], output: .action(.serve), state: .idle(.stopping)),
        Row(events: [.shutdown, .next], output: .step(.close(nil)), state: .closing),
        Row(events: [.begun, .shutdown, .next], output: .step(.close(.shuttingDown)), state: .closing),
        Row(events: [.begun, .request("a"), .shutdown, .next, .next], output: .step(.close(nil)), state: .closing),
        Row(events: [.request("a"), .shutdown, .next], output: .step(.refuse(line("a"), .shuttingDown)), state: .idle(.stopping)),
        Row(events: [.request("a"), .request("b"), .shutdown, .next, .next], output: .step(.refuse(line("b"), .shuttingDown)), state: .idle(.stopping)),
        Row(events: [.request("a"), .shutdown, .next, .next], output: .step(.close(nil)), state: .closing),
        Row(events: [.shutdown(writable: false)], output: .action(.closeNow), state: .closing),
        Row(events: [.request("a"), .next, .started, .shutdown], output: .action(.none), state: .running(.stopping)),
        Row(
            events: [.request("a"), .next, .started, .shutdown(writable: false), .request("b"), .finished, .next],
            output: .step(.refuse(line("b"), .shuttingDown)), state: .idle(.stopping)),
        // A request begun while the running one finishes during shutdown is owed ShuttingDown too.
        Row(
            events: [.request("a"), .next, .started, .shutdown, .begun, .finished, .next], output: .step(.close(.shuttingDown)),
            state: .closing),
        Row(
            events: [.request("a"), .next, .started, .shutdown, .request("b"), .begun, .finished, .next],
            output: .step(.refuse(line("b"), .shuttingDown)), state: .idle(.stopping)),
        Row(
            events: [.request("a"), .next, .started, .shutdown, .request("b"), .begun, .finished, .next, .next],
            output: .step(.close(.shuttingDown)), state: .closing),
        Row(events: [.request("a"), .inputClosed, .shutdown, .next], output: .step(.refuse(line("a"), .shuttingDown)), state: .idle(.stopping)),
        Row(events: [.begun, .inputClosed, .shutdown, .next], output: .step(.close(nil)), state: .closing),
        Row(events: [.fullTurn, .request("a"), .next, .shutdown], output: .action(.none), state: .yielded(resume: .idle(.stopping))),
        Row(
            events: [.fullTurn, .request("a"), .next, .shutdown, .resumed, .next], output: .step(.refuse(line("a"), .shuttingDown)),
            state: .idle(.stopping)),
        // Watch: requests are refused; the end of input or shutdown ends it.
        Row(events: [.request("w"), .next, .watchStarted], output: .action(.serve), state: .watching),
        Row(
            events: [.request("w"), .next, .watchStarted, .request("x"), .next], output: .step(.refuse(line("x"), .watching)),
            state: .watching),
        Row(
            events: [.request("w"), .next, .watchStarted, .tooLarge, .next], output: .step(.close(.requestTooLarge)),
            state: .closing),
        Row(events: [.request("w"), .next, .watchStarted, .inputClosed], output: .action(.close), state: .closing),
        Row(events: [.request("w"), .next, .watchStarted, .shutdown], output: .action(.close), state: .closing),
        Row(events: [.request("w"), .inputClosed, .next, .watchStarted], output: .action(.close), state: .closing),
        // Idle timeout: not while a request runs or the connection watches.
        Row(events: [.idleTimer], output: .action(.closeNow), state: .closing),
        Row(events: [.request("a"), .next, .started, .idleTimer], output: .action(.none), state: .running(.open)),
        Row(events: [.request("w"), .next, .watchStarted, .idleTimer], output: .action(.none), state: .watching),
        // Closed: nothing more is answered.
        Row(events: [.idleTimer, .request("a"), .next], output: .step(.wait), state: .closing),
    ]

    @Test(arguments: rows)
    func transition(_ row: Row) {
        var machine = Machine()
        var output = Output.nothing
        for event in row.events {
            output = Self.apply(event, to: &machine)
        }
        #expect(output == row.output)
        #expect(machine.state == row.state)
    }

    static func apply(_ event: Event, to machine: inout Machine) -> Output {
        switch event {
        case .request(let text): machine.received(.request(line(text)))
        case .begun: machine.requestBegan()
        case .tooLarge: machine.received(.tooLarge)
        case .next(let writable): return .step(machine.next(isWritable: writable))
        case .fullTurn:
            for _ in 0..<Machine.requestsPerTurn { machine.received(.request(line("r"))) }
            for _ in 0..<Machine.requestsPerTurn { _ = machine.next(isWritable: true) }
        case .beginTurn: machine.beginTurn()
        case .started: machine.requestStarted()
        case .finished: machine.requestFinished()
        case .watchStarted: return .action(machine.watchStarted())
        case .resumed: machine.turnResumed()
        case .inputClosed: return .action(machine.inputClosed())
        case .shutdown(let writable): return .action(machine.shutdownBegan(isWritable: writable))
        case .idleTimer: return .action(machine.idleTimerFired())
        case .closed: machine.closed()
        }
        return .nothing
    }

    /// Reading: while a request runs, at most the read-ahead bound; never while the client
    /// does not read its replies, while yielded, or once closing.
    struct ReadRow: Sendable, CustomTestStringConvertible {
        var events: [Event]
        var writable: Bool
        var mayRead: Bool
        var testDescription: String { events.map(\.description).joined(separator: ", ") + (writable ? "" : " (unwritable)") }
    }

    static let almostReadAhead = String(repeating: "p", count: Machine.readAheadBytes - 2)

    static let readRows: [ReadRow] = [
        ReadRow(events: [], writable: true, mayRead: true),
        ReadRow(events: [], writable: false, mayRead: false),
        ReadRow(events: [.request("a"), .next, .started], writable: true, mayRead: true),
        ReadRow(events: [.request("a"), .next, .started, .request(almostReadAhead)], writable: true, mayRead: true),
        ReadRow(events: [.request("a"), .next, .started, .request(almostReadAhead), .request("")], writable: true, mayRead: false),
        ReadRow(events: [.request("a"), .next, .started, .tooLarge], writable: true, mayRead: false),
        ReadRow(events: [.request(almostReadAhead), .request("b")], writable: true, mayRead: true),
        ReadRow(events: [.fullTurn, .request("a"), .next], writable: true, mayRead: false),
        ReadRow(events: [.request("w"), .next, .watchStarted], writable: true, mayRead: true),
        ReadRow(events: [.idleTimer], writable: true, mayRead: false),
    ]

    @Test(arguments: readRows)
    func reading(_ row: ReadRow) {
        var machine = Machine()
        for event in row.events { _ = Self.apply(event, to: &machine) }
        #expect(machine.mayRead(isWritable: row.writable) == row.mayRead)
    }

    /// A read held back while the read-ahead bound is reached goes out once the request finishes.
    @Test func aHeldReadIsReleasedWhenTheRequestFinishes() {
        var machine = Machine()
        for event in [Event.request("a"), .next, .started, .request(Self.almostReadAhead), .request("b")] {
            _ = Self.apply(event, to: &machine)
        }
        let readNow = machine.readRequested(isWritable: true)
        #expect(!readNow, "read past the read-ahead bound")
        let releasedEarly = machine.releaseHeldRead(isWritable: true)
        #expect(!releasedEarly, "released while the request still runs")
        machine.requestFinished()
        let released = machine.releaseHeldRead(isWritable: true)
        #expect(released)
        let releasedAgain = machine.releaseHeldRead(isWritable: true)
        #expect(!releasedAgain, "released twice")
    }
}
