import AccountdProtocol
import Foundation
import GRDB

/// Applies pending migrations to one account file, all or nothing: the chain's pending
/// migrations, or for a declarative bundle the plan computed from the file's own schema.
///
/// Every pending step runs inside one exclusive transaction, with foreign-key
/// enforcement off (as SQLite's table-rebuild procedure prescribes). Before commit
/// the migrator runs `PRAGMA foreign_key_check`, compares the resulting schema with
/// the bundle's target schema, and writes the history rows and the new
/// `user_version`. Any failure rolls the whole transaction back, so after a crash
/// at any instant the file is at its old version with all its rows, or at the
/// target version with all its rows.
struct Migrator {
    var bundle: SchemaBundle
    var account: AccountName
    var path: String
    /// Schemas already found equal to the target, shared by the store's migrations.
    var matched: MatchedSchemas
    /// How long a connection of its own waits for another process's lock on the file.
    var busy: Duration = Connections.defaultBusyTimeout
    /// Stops the transaction when the daemon stops (``SQLiteInterrupt/stopAll()``), or a reload
    /// withdraws the bundle (``BundleWithdrawals``): it rolls back whole.
    var interrupt = SQLiteInterrupt()

    /// Migrates the file from `fromVersion` to the bundle's target.
    ///
    /// - Parameter writer: a writable connection to the file, with foreign keys off and no
    ///   transaction open; nil opens one, and closes it after.
    /// - Returns: the wall time of the transaction, in milliseconds.
    /// - Throws: ``AccountdError`` of kind `migrationFailed` naming the file, line and
    ///   versions; `accountBusy` when the file changed version while waiting for its lock, or
    ///   another process held it locked past the busy timeout.
    func migrate(on writer: DatabaseQueue?, from fromVersion: Int, progress: ProgressHandler?) throws -> Double {
        let target = bundle.targetVersion
        let pending = bundle.declarative == nil ? Array(bundle.migrations[fromVersion..<target]) : []
        let queue: DatabaseQueue
        do {
            queue = try writer ?? DatabaseQueue(path: path, configuration: Connections.configuration(foreignKeys: false, label: "migrate", busy: busy))
        } catch {
            throw failure("cannot open \(path) for migration: \(ErrorText.of(error))", from: fromVersion)
        }
        defer { if writer == nil { try? queue.close() } }
        let started = ContinuousClock.now
        do {
            try queue.writeWithoutTransaction { db in
                try interrupt.run(on: db) {
                    try db.inTransaction(.exclusive) {
                        let current = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                        guard current == fromVersion else {
                            throw AccountdError(
                                .accountBusy,
                                "account \(account) changed from version \(fromVersion) to \(current) while waiting for its lock; retry the switch",
                                account: account.rawValue, fromVersion: fromVersion, toVersion: target)
                        }
                        if let declarative = bundle.declarative {
                            try applyPlan(declarative, db, from: fromVersion, progress: progress)
                        } else {
                            try applyChain(pending, db, from: fromVersion, progress: progress)
                        }
                        let existing = try Int.fetchOne(db, sql: "SELECT value FROM accountd_meta WHERE key = 'last_compatible_version'") ?? 0
                        try AccountRecords.setLastCompatibleVersion(db, max(existing, bundle.lastCompatibleVersion(upTo: target)))
                        try db.execute(sql: "PRAGMA user_version = \(target)")
                        return .commit
                    }
                }
            }
        } catch let error as AccountdError {
            throw error
        } catch let error as DatabaseError {
            throw failure(ErrorText.of(error), from: fromVersion, resultCode: error.resultCode)
        }
        let took = (ContinuousClock.now - started).milliseconds
        // A migration may rewrite whole tables: its WAL is as large as the account. Put it
        // into the file now and cut the WAL to nothing, rather than leave it on disk.
        try? queue.inDatabase { db in Connections.truncateWAL(db) }
        return took
    }

    /// Runs the pending migrations, checks, and records one history row per migration.
    private func applyChain(_ pending: [Migration], _ db: Database, from fromVersion: Int, progress: ProgressHandler?) throws {
        let violationsBefore = try Self.foreignKeyViolations(db)
        var durations: [Double] = []
        for (index, migration) in pending.enumerated() {
            progress?(MigrationProgress(step: index + 1, of: pending.count, name: migration.name, version: migration.version))
            let stepStart = ContinuousClock.now
            do {
                try ScriptRunner.run(migration.script, file: migration.relativePath, in: db)
            } catch {
                throw failure(
                    "migration \(error.location) failed: \(error.sqliteMessage)", from: fromVersion, file: error.file,
                    line: error.line, resultCode: error.resultCode)
            }
            durations.append((ContinuousClock.now - stepStart).milliseconds)
        }
        try checkForeignKeys(db, before: violationsBefore, allowed: pending.contains(where: \.allowsForeignKeyViolations), from: fromVersion)
        try checkSchema(db, from: fromVersion)
        let now = Timestamp.now()
        for (migration, duration) in zip(pending, durations) {
            try AccountRecords.recordMigration(db, migration, appliedAt: now, durationMs: duration, method: "migrated")
        }
    }

    /// Plans from the file's own schema, refuses any loss `schema.sql` does not allow, runs the
    /// steps, checks, and records one history row with the plan's sha256.
    private func applyPlan(_ declarative: DeclarativeSchema, _ db: Database, from fromVersion: Int, progress: ProgressHandler?) throws {
        let violationsBefore = try Self.foreignKeyViolations(db)
        let started = ContinuousClock.now
        let plan: MigrationPlan
        do {
            plan = MigrationPlan(
                account: account, fromVersion: fromVersion, version: declarative.version,
                steps: try DeclarativePlanner(schema: declarative).steps(for: db))
        } catch var error as AccountdError {
            error.message = "planning account \(account) from version \(fromVersion) to \(declarative.version): \(error.message); "
                + "nothing was written, account \(account) stays at version \(fromVersion)"
            error.account = account.rawValue
            error.fromVersion = fromVersion
            error.toVersion = declarative.version
            throw error
        }
        let refusals = plan.refusals
        guard refusals.isEmpty else {
            throw AccountdError(
                .migrationFailed,
                "migrating account \(account) from version \(fromVersion) to \(declarative.version) would lose data: "
                    + refusals.joined(separator: "; ")
                    + ". Nothing was written; account \(account) stays at version \(fromVersion). Fix those rows, or accept each loss in schema.sql: "
                    + "'-- accountd: allow-drop TABLE' or 'allow-drop TABLE.COLUMN' for a drop, 'allow-convert TABLE.COLUMN' for a type change, "
                    + "'allow-foreign-key-violations' for rows a new foreign key does not find",
                account: account.rawValue, file: path, fromVersion: fromVersion, toVersion: declarative.version, details: refusals)
        }
        for (index, step) in plan.steps.enumerated() {
            progress?(MigrationProgress(step: index + 1, of: plan.steps.count, name: "schema.sql", version: declarative.version))
            do {
                let rowsBefore = try step.keepsRowsOf.map { try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0.quotedIdentifier)") ?? 0 }
                try db.execute(sql: step.sql)
                if let table = step.keepsRowsOf, let rowsBefore {
                    let rowsAfter = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table.quotedIdentifier)") ?? 0
                    guard rowsAfter == rowsBefore else {
                        throw failure(
                            "step \(index + 1) of \(plan.steps.count) of the plan to schema.sql would lose rows: table \(table) held \(rowsBefore) row(s) "
                                + "and its rebuilt copy holds \(rowsAfter) (an ON CONFLICT REPLACE or IGNORE in schema.sql resolved rows that "
                                + "became equal under a new collation or type); fix those rows first ('accountctl plan \(account)' shows the steps)",
                            from: fromVersion, file: bundle.directory + "/schema.sql", resultCode: .SQLITE_CONSTRAINT)
                    }
                }
            } catch let error as DatabaseError {
                throw failure(
                    "step \(index + 1) of \(plan.steps.count) of the plan to schema.sql failed: \(ErrorText.of(error)) "
                        + "('accountctl plan \(account)' shows the steps)",
                    from: fromVersion, file: bundle.directory + "/schema.sql", resultCode: error.resultCode)
            }
        }
        try checkForeignKeys(db, before: violationsBefore, allowed: declarative.directives.allowsForeignKeyViolations, from: fromVersion)
        try checkSchema(db, from: fromVersion)
        try AccountRecords.record(
            db, version: declarative.version, name: "schema.sql", sha256: plan.sha256, appliedAt: Timestamp.now(),
            durationMs: (ContinuousClock.now - started).milliseconds, method: "declarative")
    }

    /// The foreign-key violations in `db` now, each as its table, rowid, parent and key.
    static func foreignKeyViolations(_ db: Database) throws -> [Row] {
        try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
    }

    private static func violationKey(_ row: Row) -> String {
        "\(row["table"] as String? ?? "")|\(row["rowid"] as Int64? ?? -1)|\(row["parent"] as String? ?? "")|\(row["fkid"] as Int64? ?? -1)"
    }

    /// Fails the migration on a foreign-key violation it made. Violations that were in the
    /// file before it (`before`; rows the app wrote while SQLite's enforcement was off, as it
    /// is by default) are not the migration's doing, and do not block it.
    private func checkForeignKeys(_ db: Database, before: [Row], allowed: Bool, from: Int) throws {
        let existing = Set(before.map(Self.violationKey))
        let violations = try Self.foreignKeyViolations(db).filter { !existing.contains(Self.violationKey($0)) }
        guard !violations.isEmpty else { return }
        let described = violations.prefix(10).map { row -> String in
            let rowid = (row["rowid"] as Int64?).map { "row \($0)" } ?? "a row"
            return "table \(row["table"] as String) \(rowid) references a missing row in \(row["parent"] as String)"
        } + (violations.count > 10 ? ["... and \(violations.count - 10) more"] : [])
        if allowed { return }
        throw AccountdError(
            .migrationFailed,
            "migrating account \(account) from version \(from) to \(bundle.targetVersion) made \(violations.count) new foreign-key violation(s); "
                + "rolled back, account \(account) stays at version \(from). Fix the migrations, or mark one (or a declarative schema.sql) "
                + "'-- accountd: allow-foreign-key-violations'",
            account: account.rawValue, file: path, fromVersion: from, toVersion: bundle.targetVersion, details: described)
    }

    private func checkSchema(_ db: Database, from: Int) throws {
        let definitions = try SchemaReader.definitions(db)
        if matched.contains(definitions) { return }
        let actual = try SchemaReader.read(db)
        let differences = SchemaDiff(leftName: "the migrated file", rightName: "the bundle's target schema")
            .differences(actual, bundle.targetSchema)
        guard !differences.isEmpty else { return matched.insert(definitions) }
        throw AccountdError(
            .migrationFailed,
            "migrating account \(account) from version \(from) to \(bundle.targetVersion) gave a schema that differs from the "
                + "bundle's target (was the file's schema edited outside accountd?); rolled back, account \(account) stays at version \(from)",
            account: account.rawValue, file: path, fromVersion: from, toVersion: bundle.targetVersion, details: differences)
    }

    private func failure(
        _ what: String, from: Int, file: String? = nil, line: Int? = nil, resultCode: ResultCode? = nil
    ) -> AccountdError {
        if resultCode?.primaryResultCode == .SQLITE_INTERRUPT && interrupt.isStopped && !SQLiteInterrupt.isStopping {
            return .withdrawnMigration(account, bundle: bundle, from: from, file: file ?? path, line: line)
        }
        if resultCode?.primaryResultCode == .SQLITE_INTERRUPT && interrupt.isStopped {
            return AccountdError(
                .interrupted,
                "the migration of account \(account) from version \(from) to \(bundle.targetVersion) was stopped because the daemon is stopping; "
                    + "rolled back, account \(account) stays at version \(from) with all its rows and is migrated at its next open",
                account: account.rawValue, file: file ?? path, line: line, fromVersion: from, toVersion: bundle.targetVersion)
        }
        let storageFailure = resultCode.map { [.SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN].contains($0.primaryResultCode) } ?? false
        // Another process held the file past the busy timeout: nothing is wrong with the
        // account or the bundle, and the same migration may succeed once it lets go.
        let busy = resultCode.map { [.SQLITE_BUSY, .SQLITE_LOCKED].contains($0.primaryResultCode) } ?? false
        if busy {
            return AccountdError(
                .accountBusy,
                "account \(account) is locked by another process: \(what); rolled back, account \(account) stays at version \(from) (target \(bundle.targetVersion)); try again once it lets go",
                account: account.rawValue, file: file ?? path, line: line, fromVersion: from, toVersion: bundle.targetVersion)
        }
        return AccountdError(
            storageFailure ? .storage : .migrationFailed,
            "\(what); rolled back, account \(account) stays at version \(from) (target \(bundle.targetVersion))",
            account: account.rawValue, file: file ?? path, line: line, fromVersion: from, toVersion: bundle.targetVersion)
    }
}

extension Duration {
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
