/// A request decoded into what it asks for, with every parameter checked and typed.
///
/// The daemon decodes each request once, into a `Command`, and works only with that;
/// `AccountdClient` builds its requests from commands, so both sides spell each
/// parameter name in one place: here and in `Command+Request.swift`.
///
/// ```swift
/// let command = try Command(Request.decode(line)!)   // the daemon
/// let request = Command.switchAccount(account: alice, create: true).request(more: false)   // a client
/// ```
public enum Command: Sendable, Hashable {
    /// `Info`: which daemon answers.
    case info
    /// `Ping`: whether it answers.
    case ping
    /// `Status`: the daemon's status, or one account's.
    case status(account: AccountName?)
    /// `List`: every account, with `details` its version and state.
    case list(details: Bool)
    /// `Switch`: make `account` active, creating it unless `create` is false.
    case switchAccount(account: AccountName, create: Bool)
    /// `Migrate`: bring accounts to the bundle's version without switching, in stages
    /// when `rollout` says so.
    case migrate(MigrateTarget, rollout: MigrateRollout = MigrateRollout())
    /// `Export`: an account's data, streamed.
    case export(account: AccountName, format: ExportFormat)
    /// `Verify`: check an account's file against the bundle.
    case verify(account: AccountName)
    /// `Plan`: the SQL that would bring an account to the bundle's version, changing nothing.
    case plan(account: AccountName)
    /// `Snapshots`: an account's snapshots, newest first.
    case snapshots(account: AccountName)
    /// `Restore`: put a snapshot back (nil means the newest), or with `at` the account as its
    /// Litestream replica had it at that time (RFC 3339 on the wire). `reclaim` restores an
    /// account handed off from this host, ending the handoff.
    case restore(account: AccountName, snapshot: String?, at: ReplicaTime? = nil, reclaim: Bool = false)
    /// `Snapshot`: take a snapshot now.
    case snapshot(account: AccountName, label: SnapshotLabel)
    /// `Remove`: remove an account, keeping a final snapshot unless `purge`; with `handoff`,
    /// a final sync to the replica, and the host refuses the account until it is pulled back.
    case remove(account: AccountName, purge: Bool, handoff: Bool = false)
    /// `Get`: one preference.
    case get(PreferenceKey)
    /// `Set`: one preference, durably.
    case set(PreferenceKey, value: JSONValue)
    /// `Delete`: one preference.
    case delete(PreferenceKey)
    /// `Keys`: the keys set in a namespace.
    case keys(namespace: String, account: AccountName?)
    /// `Watch`: the daemon's events, streamed.
    case watch
    /// `Metrics`: the daemon's counters, in Prometheus text format.
    case metrics
    /// `Replication`: each account's replication, as Litestream reports it.
    case replication
    /// `Pull`: bring an account from the Litestream replica, or from `replica` (another base
    /// URL, the old host's); refused when it exists here. `reclaim` takes a copy marked as
    /// handed off from this host's own replica all the same.
    case pull(account: AccountName, replica: String? = nil, reclaim: Bool = false)
    /// `Import`: bring an exported or copied-off file back as a new account; `overReplica`
    /// imports it even when the replica holds the account (the import then becomes the
    /// replica's newest state).
    case importAccount(account: AccountName, path: String, rebind: Bool = false, overReplica: Bool = false)
    /// `Query`: one read-only statement on an account's own tables; nil `maxRows` for the daemon's limit.
    /// With `migrate: false` (admins only), an outdated file is read at its stored version
    /// instead of being migrated first: how an admin looks at an account whose migration fails.
    case query(account: AccountName?, statement: SQLStatement, maxRows: Int?, migrate: Bool = true)
    /// `Execute`: statements that write an account's own tables, in one durable transaction.
    /// With `migrate: false` (admins only), an outdated file is written at its stored version:
    /// how an admin fixes the data a migration cannot take, before migrating it again.
    case execute(account: AccountName?, statements: [SQLStatement], migrate: Bool = true)

    /// The method this command calls.
    public var method: Method {
        switch self {
        case .info: .info
        case .ping: .ping
        case .status: .status
        case .list: .list
        case .switchAccount: .switchAccount
        case .migrate: .migrate
        case .export: .export
        case .verify: .verify
        case .plan: .plan
        case .snapshots: .snapshots
        case .restore: .restore
        case .snapshot: .snapshot
        case .remove: .remove
        case .get: .get
        case .set: .set
        case .delete: .delete
        case .keys: .keys
        case .watch: .watch
        case .metrics: .metrics
        case .replication: .replication
        case .pull: .pull
        case .query: .query
        case .execute: .execute
        case .importAccount: .importAccount
        }
    }
}

/// Which accounts `Migrate` works on.
public enum MigrateTarget: Sendable, Hashable {
    /// Every account under the data root.
    case all
    /// These accounts (at least one), in this order.
    case accounts([AccountName])
}

/// How `Migrate` stages its work: which accounts go first, which are left out, a bound on
/// failures, whether missing accounts are created, and whether the release is rolled back.
///
/// Accounts are taken in the target's order, the `canaryAccounts` first. With a `canary`
/// of N (or N `canaryAccounts`), the first N accounts are migrated and the rest begin only
/// if all N succeeded (`migrated`, `created` or `current`). With `maxFailures` F, no
/// account begins once F have failed. The accounts not begun are reported `skipped`;
/// running the same Migrate again resumes, as the accounts it did are now `current`.
public struct MigrateRollout: Sendable, Hashable {
    /// The most accepted for either bound.
    public static let maximum = 1_000_000_000

    /// How many accounts to migrate first, before any other begins; nil for no canary.
    public var canary: Int?
    /// How many failures stop the rollout; nil for none (a failed account never stops the others).
    public var maxFailures: Int?
    /// Create the named accounts that are missing (at the bundle's version) rather than
    /// failing them with `AccountNotFound`.
    public var create: Bool
    /// The accounts the canary is made of: taken first, and the canary is their number
    /// (they need not be in the target; a named one that is missing fails unless `create`).
    public var canaryAccounts: [AccountName]
    /// Accounts left out: neither migrated nor reported.
    public var exclude: [AccountName]
    /// Roll the release back instead: restore each account above this version from its
    /// newest `before-migrate` snapshot at this version. The bundle in force must not be
    /// newer than it.
    public var rollbackTo: Int?

    public init(
        canary: Int? = nil, maxFailures: Int? = nil, create: Bool = false, canaryAccounts: [AccountName] = [],
        exclude: [AccountName] = [], rollbackTo: Int? = nil
    ) {
        self.canary = canary
        self.maxFailures = maxFailures
        self.create = create
        self.canaryAccounts = canaryAccounts
        self.exclude = exclude
        self.rollbackTo = rollbackTo
    }

    /// The accounts in the order they begin: the canary's named accounts first, then the
    /// others of `accounts`, without those excluded; and the canary's size.
    public func ordered(_ accounts: [AccountName]) -> (accounts: [AccountName], canary: Int?) {
        let excluded = Set(exclude)
        let first = canaryAccounts.filter { !excluded.contains($0) }
        let named = Set(first)
        let rest = accounts.filter { !excluded.contains($0) && !named.contains($0) }
        return (first + rest, canaryAccounts.isEmpty ? canary : (first.isEmpty ? nil : first.count))
    }
}

/// The formats `Export` streams in.
public enum ExportFormat: String, Sendable, Hashable, CaseIterable {
    /// One reply per row.
    case jsonl
    /// SQL text that rebuilds the account with the `sqlite3` shell.
    case sql
    /// The SQLite file's bytes, base64 in chunks.
    case sqlite
}

/// The value a `Get`, `Set` or `Delete` is about.
public struct PreferenceKey: Sendable, Hashable {
    /// The longest key accepted, in UTF-8 bytes.
    public static let maximumBytes = 1024

    public var namespace: String
    public var key: String
    /// The account, for a per-account namespace; nil means the active account.
    public var account: AccountName?

    public init(namespace: String, key: String, account: AccountName? = nil) {
        self.namespace = namespace
        self.key = key
        self.account = account
    }
}
