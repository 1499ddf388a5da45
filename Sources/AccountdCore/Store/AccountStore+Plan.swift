import AccountdProtocol
import GRDB

extension AccountStore {
    /// What bringing `account` to the bundle's target would do, as SQL. Changes nothing.
    ///
    /// For a declarative bundle the plan is computed from the file's own schema, as a
    /// migration would compute it, with each lossy step marked; at the target version it is
    /// the repair of a drifted schema (empty when the file matches `schema.sql`). For a chain
    /// it is the text of the pending migrations, none of them marked lossy: a chain's steps
    /// are the app's own SQL, run as written.
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Throws: ``AccountdError``: `accountNotFound`, `accountCorrupt`, `accountTooNew`, or
    ///   `migrationFailed` when no plan reaches `schema.sql`.
    public func plan(_ account: AccountName, holding hold: AccountHold? = nil) throws -> MigrationPlan {
        try withAccount(account, holding: hold) {
            let path = root.accountPath(account)
            guard FileSystem.exists(path) else {
                throw AccountdError(.accountNotFound, "account \(account) does not exist: there is nothing to plan", account: account.rawValue, file: path)
            }
            // Opening a WAL-mode file, even read-only, makes SQLite create -shm (and an empty -wal)
            // beside it. A plan only reads: whatever of those it created goes again once its
            // connections are closed (this defer runs after theirs). The lock is held, so no
            // other connection of accountd's has the file open.
            let companions = ["-wal", "-shm"].filter { !FileSystem.exists(path + $0) }
            defer {
                for suffix in companions where suffix == "-shm" || FileSystem.size(of: path + suffix) == 0 {
                    try? FileSystem.removeIfPresent(path + suffix)
                }
            }
            let facts = try AccountInspector.inspect(path: path, account: account, deep: false, busy: options.lockTimeout)
            guard isUsable(facts) else { throw tooNew(account, facts) }
            let target = bundle.targetVersion
            var plan = MigrationPlan(account: account, fromVersion: facts.version, version: target, steps: [])
            if let declarative = bundle.declarative, facts.version <= target {
                let queue = try DatabaseQueue(
                    path: path, configuration: Connections.configuration(foreignKeys: false, readonly: true, label: "plan", busy: options.lockTimeout))
                defer { try? queue.close() }
                plan.steps = try queue.read { db in try DeclarativePlanner(schema: declarative).steps(for: db) }
            } else if facts.version < target {
                plan.steps = bundle.migrations[facts.version..<target].map { migration in
                    MigrationPlan.Step("-- \(migration.relativePath)\n" + migration.script.statements.map(\.text).joined(separator: "\n"))
                }
            }
            return plan
        }
    }
}
