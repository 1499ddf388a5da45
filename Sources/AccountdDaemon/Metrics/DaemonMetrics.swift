import AccountdCore
import AccountdProtocol
import CoreMetrics
import Prometheus
import Synchronization

/// The daemon's metrics: what it counts, and the Prometheus registry that holds it.
///
/// Every part records through the swift-metrics API, with this instance's ``factory``
/// passed explicitly rather than the process-wide `MetricsSystem`. Each daemon (and each
/// set of daemon parts a test builds in-process) so has a registry of its own, and its
/// counters say exactly what that daemon did. ``bootstrapProcess()`` also hands the
/// factory of the daemon's instance to `MetricsSystem`, once per process, so that
/// libraries that record through the global system land in the same registry.
///
/// The names are listed in docs/PROTOCOL.md ("Metrics"); ``Name`` is their one spelling.
final class DaemonMetrics: Sendable {
    /// The metric names, `accountd_` and Prometheus style.
    enum Name {
        static let requests = "accountd_requests_total"
        static let requestDuration = "accountd_request_duration_seconds"
        static let migrations = "accountd_migrations_total"
        static let migrationSteps = "accountd_migration_steps_total"
        static let migrationDuration = "accountd_migration_duration_seconds"
        static let migrationFailures = "accountd_migration_failures_total"
        static let snapshots = "accountd_snapshots_total"
        static let commitBatchSize = "accountd_group_commit_batch_size"
        static let commitDuration = "accountd_group_commit_duration_seconds"
        static let commitFailures = "accountd_group_commit_failures_total"
        static let connectionsOpen = "accountd_connections_open"
        static let connectionsAccepted = "accountd_connections_accepted_total"
        static let connectionsRefused = "accountd_connections_refused_total"
        static let activeAccount = "accountd_active_account"
        static let activeAccounts = "accountd_active_accounts"
        static let accounts = "accountd_accounts"
        static let replicationLag = "accountd_replication_lag_seconds"
        static let replicationAccounts = "accountd_replication_accounts"
        static let replicationUp = "accountd_replication_litestream_up"
        static let up = "accountd_up"
        static let bundleVersion = "accountd_bundle_version"
        static let accountsByState = "accountd_accounts_by_state"
        static let migrationsRunning = "accountd_migrations_running"
        static let migrationOldest = "accountd_migration_oldest_running_seconds"
        static let diskBytes = "accountd_disk_bytes"
        static let snapshotsStored = "accountd_snapshots_stored"
        static let scrapeTime = "accountd_metrics_timestamp_seconds"
        static let failureRecordsLost = "accountd_failure_records_lost"
        static let bundleCheckSeconds = "accountd_reload_bundle_check_seconds"
    }

    /// Why a snapshot was taken: the `reason` label of ``Name/snapshots``.
    enum SnapshotReason: String {
        /// Before an account was migrated.
        case migrate
        /// On request (`Snapshot`).
        case request
        /// Of the file a `Restore` replaced.
        case restore
        /// The final snapshot of a `Remove`.
        case remove
    }

    /// The registry the text comes from.
    let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory over ``registry``, with the daemon's histogram buckets.
    let factory: PrometheusMetricsFactory
    /// Whether ``Name/activeAccount`` is labelled with the account's name (`metrics.accountLabels`).
    let accountLabels: Bool
    /// The account the ``Name/activeAccount`` gauge names now.
    private let shownActive = Mutex<String?>(nil)
    /// Each method's success counter and latency timer, made once: recording a request
    /// then costs no lookup in the registry and takes no lock.
    private let perMethod: [Method: (ok: CoreMetrics.Counter, duration: CoreMetrics.Timer)]
    /// The counters of the other outcomes, made the first time each is seen (errors are rare).
    private let otherOutcomes = Mutex<[String: CoreMetrics.Counter]>([:])

    private static let bootstrapped = Atomic<Bool>(false)

    /// A new, empty registry with the daemon's metrics at zero; `accountLabels` labels
    /// ``Name/activeAccount`` with the account's name.
    init(accountLabels: Bool = false) {
        self.accountLabels = accountLabels
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        let quick: [Duration] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5),
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
        ]
        factory.durationHistogramBuckets = [
            Name.requestDuration: quick,
            Name.commitDuration: quick,
            Name.migrationDuration: [
                .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5), .seconds(10),
                .seconds(30), .seconds(60), .seconds(300), .seconds(1800),
            ],
        ]
        factory.valueHistogramBuckets = [Name.commitBatchSize: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]]
        self.factory = factory
        perMethod = Dictionary(
            uniqueKeysWithValues: Method.allCases.map { method in
                (
                    method,
                    (
                        ok: CoreMetrics.Counter(label: Name.requests, dimensions: [("method", method.rawValue), ("outcome", "ok")], factory: factory),
                        duration: CoreMetrics.Timer(label: Name.requestDuration, dimensions: [("method", method.rawValue)], factory: factory)
                    )
                )
            })
        // Present from the start, at zero, so that a scrape shows them before anything happened.
        for name in [Name.migrations, Name.migrationSteps, Name.connectionsAccepted, Name.connectionsRefused] {
            _ = CoreMetrics.Counter(label: name, factory: factory)
        }
        _ = CoreMetrics.Counter(label: Name.migrationFailures, dimensions: [("error", ErrorName.migrationFailed.shortName)], factory: factory)
        CoreMetrics.Gauge(label: Name.connectionsOpen, factory: factory).record(0)
    }

    /// Hands this registry's factory to `MetricsSystem`, the first time it is called in the
    /// process; later calls (a second daemon in the same process) change nothing.
    func bootstrapProcess() {
        guard Self.bootstrapped.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        MetricsSystem.bootstrap(factory)
    }

    /// The registry as Prometheus text, after setting the gauges computed on demand: the
    /// `fleet`'s figures, and `active` (the account systemd's status line describes; nil
    /// for none), named only with ``accountLabels``.
    func text(active: AccountName?, fleet: FleetFigures, now: Double) -> String {
        func gauge(_ name: String, _ value: Double, _ dimensions: [(String, String)] = []) {
            CoreMetrics.Gauge(label: name, dimensions: dimensions, factory: factory).record(value)
        }
        gauge(Name.up, 1)
        gauge(Name.scrapeTime, now)
        gauge(Name.bundleVersion, Double(fleet.bundleVersion))
        gauge(Name.accounts, Double(fleet.accounts))
        for (state, count) in fleet.byState { gauge(Name.accountsByState, Double(count), [("state", state)]) }
        gauge(Name.migrationsRunning, Double(fleet.migrationsRunning))
        gauge(Name.migrationOldest, fleet.oldestMigrationSeconds)
        gauge(Name.activeAccounts, Double(fleet.active.count))
        let disk = fleet.disk
        for (kind, bytes) in [("file", disk.fileBytes), ("wal", disk.walBytes), ("snapshots", disk.snapshotBytes), ("litestream", disk.litestreamBytes)] {
            gauge(Name.diskBytes, Double(bytes), [("kind", kind)])
        }
        gauge(Name.snapshotsStored, Double(disk.snapshotCount))
        gauge(Name.failureRecordsLost, Double(fleet.failureRecordsLost))
        gauge(Name.bundleCheckSeconds, fleet.bundleCheckSeconds)
        if accountLabels {
            let name = active?.rawValue
            shownActive.withLock { shown in
                guard shown != name else { return }
                if let shown { CoreMetrics.Gauge(label: Name.activeAccount, dimensions: [("account", shown)], factory: factory).destroy() }
                if let name { CoreMetrics.Gauge(label: Name.activeAccount, dimensions: [("account", name)], factory: factory).record(1) }
                shown = name
            }
        }
        return registry.emitToString()
    }

    /// The replication gauges, from a `Replication` look-up over every account: the worst
    /// lag (seconds since the replica last had everything of the account furthest behind),
    /// how many accounts are in each state (`replicating`, `behind`, `not-replicated`, ...),
    /// and whether Litestream answered. No account names in labels.
    func replication(_ reply: ReplicationReply) {
        guard reply.enabled else { return }
        CoreMetrics.Gauge(label: Name.replicationUp, factory: factory).record(reply.litestream ? 1 : 0)
        CoreMetrics.Gauge(label: Name.replicationLag, factory: factory).record(reply.worstSecondsBehind ?? 0)
        var states: [String: Int] = ["replicating": 0, ReplicationAccount.behindStatus: 0, "not-replicated": 0, "unknown": 0]
        for account in reply.accounts { states[account.status, default: 0] += 1 }
        for (state, count) in states {
            CoreMetrics.Gauge(label: Name.replicationAccounts, dimensions: [("state", state)], factory: factory).record(count)
        }
    }

    // MARK: - Requests

    /// One request answered: `error` is nil for success, else the error reply's name.
    func request(_ method: Method?, error: ErrorName?, since start: ContinuousClock.Instant) {
        request(method, outcome: error?.shortName ?? "ok", since: start)
    }

    /// One request ended with `outcome`: `ok`, an error's short name, or `ClientGone` when
    /// the client left before its replies were written.
    func request(_ method: Method?, outcome: String, since start: ContinuousClock.Instant) {
        let elapsed = Self.nanoseconds(ContinuousClock.now - start)
        if let method, let handles = perMethod[method] {
            handles.duration.recordNanoseconds(elapsed)
            if outcome == "ok" {
                handles.ok.increment()
                return
            }
        }
        let label = method?.rawValue ?? "unknown"
        let counter = otherOutcomes.withLock { counters in
            let key = label + " " + outcome
            if let known = counters[key] { return known }
            let made = CoreMetrics.Counter(label: Name.requests, dimensions: [("method", label), ("outcome", outcome)], factory: factory)
            counters[key] = made
            return made
        }
        counter.increment()
        if method == nil {
            CoreMetrics.Timer(label: Name.requestDuration, dimensions: [("method", label)], factory: factory).recordNanoseconds(elapsed)
        }
    }

    // MARK: - Accounts

    /// A migration that committed: its steps and how long its transaction took.
    func migrated(steps: Int, milliseconds: Double?) {
        CoreMetrics.Counter(label: Name.migrations, factory: factory).increment()
        CoreMetrics.Counter(label: Name.migrationSteps, factory: factory).increment(by: steps)
        if let milliseconds {
            CoreMetrics.Timer(label: Name.migrationDuration, factory: factory).recordNanoseconds(Int64(milliseconds * 1_000_000))
        }
    }

    /// A migration that began (a step was announced) and failed with `error` (a short
    /// error name): the account is in the log line of the failure, never in a label.
    func migrationFailed(error: String) {
        CoreMetrics.Counter(label: Name.migrationFailures, dimensions: [("error", error)], factory: factory).increment()
    }

    /// A snapshot taken, and why.
    func snapshot(_ reason: SnapshotReason) {
        CoreMetrics.Counter(label: Name.snapshots, dimensions: [("reason", reason.rawValue)], factory: factory).increment()
    }

    // MARK: - Group commit

    /// The observer a preference table of `scope` (`device` or `account`) reports its commits to.
    /// Its handles are made once, here: the observer runs on the committing thread, between
    /// one commit and the next.
    func commitObserver(scope: String) -> PreferenceCommitObserver {
        let dimensions = [("scope", scope)]
        let batchSize = CoreMetrics.Recorder(label: Name.commitBatchSize, dimensions: dimensions, aggregate: true, factory: factory)
        let duration = CoreMetrics.Timer(label: Name.commitDuration, dimensions: dimensions, factory: factory)
        let failures = CoreMetrics.Counter(label: Name.commitFailures, dimensions: dimensions, factory: factory)
        return { changes, took, failed in
            batchSize.record(changes)
            duration.recordNanoseconds(Self.nanoseconds(took))
            if failed { failures.increment() }
        }
    }

    // MARK: - Connections

    /// A connection accepted (and served); `open` counts the connections open now.
    func connectionAccepted(open: Int) {
        CoreMetrics.Counter(label: Name.connectionsAccepted, factory: factory).increment()
        connections(open: open)
    }

    /// A connection refused because `limits.maxConnections` were open.
    func connectionRefused() {
        CoreMetrics.Counter(label: Name.connectionsRefused, factory: factory).increment()
    }

    /// How many connections are open now.
    func connections(open: Int) {
        CoreMetrics.Gauge(label: Name.connectionsOpen, factory: factory).record(open)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }
}
