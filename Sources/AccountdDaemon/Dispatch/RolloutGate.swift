import AccountdProtocol

/// Decides when `Migrate` may begin another account: the concurrency bound, the canary
/// and `maxFailures` of its ``MigrateRollout``.
///
/// The canary's accounts run (up to the concurrency) and nothing else begins until all
/// of them have finished; then the rest begin if none failed. Once `maxFailures`
/// accounts have failed, nothing more begins. Accounts already running finish either way.
struct RolloutGate {
    private let rollout: MigrateRollout
    private let concurrency: Int
    private var running = 0
    private var begun = 0
    private var finishedCount = 0
    private var failures = 0
    /// Why no more accounts begin; nil while they may.
    private(set) var stopped: MigrateSummary.Stop?

    init(_ rollout: MigrateRollout, concurrency: Int) {
        self.rollout = rollout
        self.concurrency = concurrency
    }

    /// Whether another account may begin now.
    var mayStart: Bool {
        guard stopped == nil, running < concurrency else { return false }
        if let canary = rollout.canary, begun >= canary, finishedCount < canary { return false }
        return true
    }

    /// An account began.
    mutating func started() {
        running += 1
        begun += 1
    }

    /// A reload withdrew the bundle the rollout runs under: nothing more begins.
    mutating func withdraw() {
        if stopped == nil { stopped = .withdrawn }
    }

    /// An account finished; `failed` says whether it failed.
    mutating func finished(failed: Bool) {
        running -= 1
        finishedCount += 1
        if failed { failures += 1 }
        guard stopped == nil else { return }
        if let maxFailures = rollout.maxFailures, failures >= maxFailures {
            stopped = .maxFailures
        } else if let canary = rollout.canary, finishedCount == canary, failures > 0 {
            stopped = .canary
        }
    }
}
