import AccountdCore
import AccountdProtocol

/// What the metrics read at each scrape, rather than count as it happens: the bundle, the
/// accounts by state, the migrations running, and the disk the accounts take.
///
/// None of it carries an account's name, so a fleet of devices has a bounded number of
/// series whatever its accounts (the active account's name only behind `metrics.accountLabels`).
struct FleetFigures: Sendable {
    /// The bundle's target version.
    var bundleVersion: Int
    /// Account files under the data root.
    var accounts: Int
    /// How many accounts in each of ``states``.
    var byState: [String: Int]
    /// Migrations running now (a step begun), and how long the oldest has run, in seconds.
    var migrationsRunning: Int
    var oldestMigrationSeconds: Double
    /// The accounts that are some uid's active account.
    var active: [AccountName]
    /// The bytes the accounts take on disk, part by part.
    var disk: AccountDiskUse
    /// The records of failed accounts `failures.json` held that could not be read at start (``AccountFailures/lost``).
    var failureRecordsLost = 0
    /// How long the running reload's bundle check has run, in seconds; 0 while none runs.
    var bundleCheckSeconds = 0.0

    /// Reads the figures now. Blocking: lists the data root, stats each account's file and
    /// WAL, reads the files that changed since the last census, and walks `snapshots/`.
    static func read(
        store: AccountStore, census: AccountCensus, board: MigrationBoard, failed: [AccountName: FailureRecord.Failure],
        active: Set<AccountName>
    ) -> FleetFigures {
        let states = census.take(store) { board.isMigrating($0) }
        var byState = Dictionary(uniqueKeysWithValues: AccountView.labels.map { ($0, 0) })
        for (account, state) in states {
            // Decided as `Status ACCOUNT` and `List` decide it (``AccountView``).
            let name = AccountView.label(file: state, failure: failed[account], migrating: board.isMigrating(account))
            byState[name, default: 0] += 1
        }
        let migrations = board.migrations()
        let oldest = migrations.oldest.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 } ?? 0
        return FleetFigures(
            bundleVersion: store.targetVersion, accounts: states.count, byState: byState, migrationsRunning: migrations.count,
            oldestMigrationSeconds: oldest, active: active.sorted(), disk: AccountDiskUse.total(in: store.root))
    }
}
