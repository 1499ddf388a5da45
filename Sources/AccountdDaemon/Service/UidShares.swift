import NIOCore
import Synchronization

/// Each caller uid's fair share of the blocking pool for an app's statements (`Query`,
/// `Execute`, each piece of a streamed `Query` or an `Export`): at most ``perUid`` of one
/// uid's jobs run at once (`limits.statementsPerUid`); the uid's others wait here, first
/// come first served, holding no thread, and another uid's jobs never wait behind them.
///
/// So one person's slow statements take at most their share of the pool's threads, and the
/// rest stay free for everyone else (docs/RELIABILITY.md, guarantee 7). Root (uid 0), who
/// administers the daemon, has no cap.
final class UidShares: Sendable {
    /// How many jobs of one uid run at once.
    let perUid: Int

    private struct State {
        var running: [UInt32: Int] = [:]
        var waiting: [UInt32: CircularBuffer<CheckedContinuation<Void, Never>>] = [:]
    }

    private let state = Mutex(State())

    init(perUid: Int) {
        self.perUid = max(1, perUid)
    }

    /// Runs `body` (a pool job) once `uid` has a share free, and frees it after.
    func run<T: Sendable>(_ uid: UInt32, _ body: () async throws -> T) async throws -> T {
        if uid == 0 { return try await body() }
        await enter(uid)
        defer { leave(uid) }
        return try await body()
    }

    /// Waits, holding no thread, until fewer than ``perUid`` of `uid`'s jobs run, and counts one more.
    private func enter(_ uid: UInt32) async {
        let admitted = state.withLock { state -> Bool in
            let running = state.running[uid, default: 0]
            guard running >= perUid || state.waiting[uid] != nil else {
                state.running[uid] = running + 1
                return true
            }
            return false
        }
        if admitted { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                // A share may have come free since the first look.
                let running = state.running[uid, default: 0]
                if running < perUid && state.waiting[uid] == nil {
                    state.running[uid] = running + 1
                    return true
                }
                state.waiting[uid, default: []].append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Frees one of `uid`'s shares: handed to its first waiter, if any (its count unchanged).
    private func leave(_ uid: UInt32) {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if var queue = state.waiting[uid], let first = queue.popFirst() {
                state.waiting[uid] = queue.isEmpty ? nil : queue
                return first
            }
            let left = state.running[uid, default: 1] - 1
            state.running[uid] = left > 0 ? left : nil
            return nil
        }
        next?.resume()
    }

    /// How many of `uid`'s jobs run now, and how many wait (for tests and metrics).
    func load(of uid: UInt32) -> (running: Int, waiting: Int) {
        state.withLock { ($0.running[uid] ?? 0, $0.waiting[uid]?.count ?? 0) }
    }
}
