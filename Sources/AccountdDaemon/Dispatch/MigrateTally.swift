import AccountdProtocol

/// The counts of a `Migrate`'s results, for its summary.
struct MigrateTally {
    /// How many accounts the Migrate works on.
    let count: Int
    private var byResult: [String: Int] = [:]
    private var interrupted = 0

    init(count: Int) { self.count = count }

    mutating func add(_ result: MigrateResult) {
        byResult[result.result, default: 0] += 1
        if result.interrupted { interrupted += 1 }
    }

    /// The summary reply: the counts, why the rollout `stopped`, and the `results` when
    /// they were not streamed.
    func summary(stopped: MigrateSummary.Stop?, results: [MigrateResult]?) -> MigrateSummary {
        var summary = MigrateSummary(
            count: count, migrated: byResult["migrated"] ?? 0, current: byResult["current"] ?? 0, failed: byResult["failed"] ?? 0,
            skipped: byResult["skipped"] ?? 0, stopped: stopped, results: results, created: byResult["created"] ?? 0,
            restored: byResult["restored"] ?? 0)
        summary.interrupted = interrupted
        return summary
    }
}
