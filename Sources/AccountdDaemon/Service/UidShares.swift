import NIOCore
import Synchronization

/// Each caller uid's fair share of the blocking pool for an app's statements (`Query`,
/// `Execute`, each piece of a streamed `Query` or an `Export`).
///
/// Three bounds, checked when a job arrives and whenever one ends:
/// - at most ``perUid`` of one uid's jobs run at once (`limits.statementsPerUid`);
/// - at most ``threads`` jobs run at once in all, so that the pool's other threads stay free
///   for the daemon's own work (preference commits, switches, migrations);
/// - the last ``reserve`` of those threads go only to a uid that has nothing running: a job
///   of a uid already running one waits once `threads - reserve` run.
///
/// A job that may not run waits here, holding no thread, first come first served within its
/// uid; a later job of another uid that may run does not wait behind it. A statement inside
/// one long call of an SQL function cannot be interrupted (the timeout acts between SQLite's
/// steps), so the reserve is what lets another person's first statement run while a few
/// uids hold every other thread with such calls: to hold them all takes `reserve` more uids
/// (docs/PROTOCOL.md, Query and Execute). Root (uid 0), who administers the daemon, is not
/// counted.
final class UidShares: Sendable {
    /// How many jobs of one uid run at once.
    let perUid: Int
    /// How many jobs run at once in all.
    let threads: Int
    /// How many of ``threads`` only a uid with nothing running may take.
    let reserve: Int

    private struct Waiter {
        let uid: UInt32
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var running: [UInt32: Int] = [:]
        var busy = 0
        var waiting: CircularBuffer<Waiter> = []
        var waitingByUid: [UInt32: Int] = [:]
    }

    private let state = Mutex(State())

    /// - Parameters:
    ///   - perUid: how many of one uid's jobs run at once.
    ///   - threads: how many jobs run at once in all (nil: no bound beyond `perUid`).
    init(perUid: Int, threads: Int? = nil) {
        let threads = max(1, threads ?? Int.max / 2)
        self.threads = threads
        reserve = threads >= 3 ? max(1, threads / 3) : 0
        self.perUid = max(1, min(perUid, threads))
    }

    /// The threads app statements may take of a blocking pool of `poolThreads`, of which
    /// `migrations` are kept for `Migrate`: all but those and two more.
    static func threads(poolThreads: Int, migrations: Int) -> Int {
        max(2, poolThreads - migrations - 2)
    }

    /// Runs `body` (a pool job) once `uid` may, and frees its place after.
    func run<T: Sendable>(_ uid: UInt32, _ body: () async throws -> T) async throws -> T {
        if uid == 0 { return try await body() }
        await enter(uid)
        defer { leave(uid) }
        return try await body()
    }

    /// Whether a job of `uid` may start now, its uid's earlier jobs having started.
    private func mayStart(_ uid: UInt32, _ state: State) -> Bool {
        let mine = state.running[uid, default: 0]
        if mine >= perUid || state.busy >= threads { return false }
        return mine == 0 || state.busy < threads - reserve
    }

    private func start(_ uid: UInt32, _ state: inout State) {
        state.running[uid, default: 0] += 1
        state.busy += 1
    }

    /// Waits, holding no thread, until a job of `uid` may start, and counts it.
    private func enter(_ uid: UInt32) async {
        let started = state.withLock { state -> Bool in
            guard state.waitingByUid[uid] == nil, mayStart(uid, state) else { return false }
            start(uid, &state)
            return true
        }
        if started { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                // A place may have come free since the first look.
                if state.waitingByUid[uid] == nil && mayStart(uid, state) {
                    start(uid, &state)
                    return true
                }
                state.waiting.append(Waiter(uid: uid, continuation: continuation))
                state.waitingByUid[uid, default: 0] += 1
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Frees one of `uid`'s places and starts every waiter that may start now, in order
    /// (a uid whose first waiter may not start keeps its later ones waiting too).
    private func leave(_ uid: UInt32) {
        let next = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let left = state.running[uid, default: 1] - 1
            state.running[uid] = left > 0 ? left : nil
            state.busy -= 1
            guard !state.waiting.isEmpty else { return [] }
            var started: [CheckedContinuation<Void, Never>] = []
            var kept: CircularBuffer<Waiter> = []
            var held: Set<UInt32> = []
            while let waiter = state.waiting.popFirst() {
                if state.busy >= threads {
                    kept.append(waiter)
                    kept.append(contentsOf: state.waiting)
                    state.waiting.removeAll()
                    break
                }
                if !held.contains(waiter.uid) && mayStart(waiter.uid, state) {
                    start(waiter.uid, &state)
                    let count = state.waitingByUid[waiter.uid, default: 1] - 1
                    state.waitingByUid[waiter.uid] = count > 0 ? count : nil
                    started.append(waiter.continuation)
                } else {
                    held.insert(waiter.uid)
                    kept.append(waiter)
                }
            }
            state.waiting = kept
            return started
        }
        for continuation in next { continuation.resume() }
    }

    /// How many of `uid`'s jobs run now, and how many wait (for tests and metrics).
    func load(of uid: UInt32) -> (running: Int, waiting: Int) {
        state.withLock { ($0.running[uid] ?? 0, $0.waitingByUid[uid] ?? 0) }
    }
}
