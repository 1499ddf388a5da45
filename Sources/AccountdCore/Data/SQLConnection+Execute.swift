import AccountdProtocol
import CSQLiteConfig

extension SQLConnection {
    /// What one `Execute` did: each statement's result, and the tables they wrote.
    public struct Executed: Sendable {
        public var results: [ExecuteReply.Result]
        /// Tables its statements that changed rows may have written, those of triggers included.
        public var tables: Set<String>
    }

    /// One `Execute` of a batch: its statements, and what stops them when its client leaves.
    public struct Batched: Sendable {
        public var statements: [SQLStatement]
        public var stop: SQLStop

        public init(statements: [SQLStatement], stop: SQLStop) {
            self.statements = statements
            self.stop = stop
        }
    }

    /// Runs several `Execute`s in one transaction, each all or nothing within it (a savepoint
    /// each), and commits once with `synchronous = FULL`: concurrent writers of one account
    /// share one sync, as preference Sets do.
    ///
    /// An `Execute` that fails is rolled back to its savepoint and gets its error; the others
    /// go on. When a failure takes the whole transaction with it (an interrupted write, a
    /// `RAISE(ROLLBACK)`, a full disk), the ones that had succeeded are run again, without it,
    /// in a new transaction. When the commit fails, every one that was in it gets the error.
    /// Nothing is reported done before the commit.
    ///
    /// - Parameter timeout: how long each `Execute`'s statements may run (`QueryTimeout`).
    /// - Returns: one outcome per `Execute`, in order; failures are `StatementNotAllowed`,
    ///   `SQLError`, `QueryTimeout`, `InvalidParameter` or ``SQLStopped``.
    public func execute(batch: [Batched], timeout: Duration) -> [Result<Executed, any Error>] {
        var outcomes = [Result<Executed, any Error>?](repeating: nil, count: batch.count)
        defer { finish() }
        while true {
            let pending = batch.indices.filter { outcomes[$0] == nil }
            do {
                try run("BEGIN IMMEDIATE")
            } catch {
                for index in pending { outcomes[index] = .failure(error) }
                break
            }
            var done: [(Int, Executed)] = []
            var transactionLost = false
            for index in pending {
                if batch[index].stop.isStopped {
                    outcomes[index] = .failure(SQLStopped())
                    continue
                }
                do {
                    try run("SAVEPOINT accountd_execute")
                    begin(deadline: .now + timeout, stop: batch[index].stop)
                    let executed = try runStatements(batch[index].statements)
                    end()
                    try run("RELEASE accountd_execute")
                    done.append((index, executed))
                } catch {
                    end()
                    outcomes[index] = .failure(error)
                    if sqlite3_get_autocommit(handle) != 0 {
                        transactionLost = true
                        break
                    }
                    do {
                        try run("ROLLBACK TO accountd_execute")
                        try run("RELEASE accountd_execute")
                    } catch {
                        try? run("ROLLBACK")
                        transactionLost = true
                        break
                    }
                }
            }
            if transactionLost {
                // The Executes that had succeeded are run again, without the one that failed.
                resetStatements()
                continue
            }
            if done.isEmpty {
                // Nothing to keep: a rollback writes nothing, where a commit would write the
                // pages the failed ones touched, unchanged, to the WAL.
                try? run("ROLLBACK")
                break
            }
            do {
                try run("COMMIT")
                for (index, executed) in done { outcomes[index] = .success(executed) }
                cutWALIfLarge()
            } catch {
                if sqlite3_get_autocommit(handle) == 0 { try? run("ROLLBACK") }
                for (index, _) in done { outcomes[index] = .failure(error) }
            }
            break
        }
        return outcomes.map { $0 ?? .failure(SQLStopped()) }
    }

    /// After a commit that left the WAL larger than `accounts.walMaxBytes`: copies it into the
    /// file and truncates it to nothing (`wal_checkpoint(TRUNCATE)`), so that a large `Execute`
    /// on an account nothing writes to afterwards does not keep a copy of its change on disk.
    /// `journal_size_limit` alone cuts the WAL back only when a later write starts it over.
    ///
    /// Never waits: a reader in the way leaves the WAL as it is (the next large commit tries
    /// again). With replication the checkpoints are Litestream's (``Connections/replicated``).
    func cutWALIfLarge() {
        guard !Connections.replicated.load(ordering: .relaxed) else { return }
        guard FileSystem.size(of: path + "-wal") > Connections.walSizeLimit.load(ordering: .relaxed) else { return }
        sqlite3_busy_timeout(handle, 0)
        defer { sqlite3_busy_timeout(handle, busyMs) }
        _ = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
    }

    /// Runs one `Execute`'s statements inside the open transaction.
    private func runStatements(_ statements: [SQLStatement]) throws -> Executed {
        var executed = Executed(results: [], tables: [])
        for statement in statements {
            let compiled = try compile(statement.sql, mode: .execute)
            try bind(statement.parameters, to: compiled.handle, sql: statement.sql)
            guardState.reset(.execute)
            // What this statement inserted, not an earlier one's (or another client's, in a shared transaction).
            sqlite3_set_last_insert_rowid(handle, 0)
            let changedBefore = sqlite3_total_changes64(handle)
            var code = sqlite3_step(compiled.handle)
            while code == SQLITE_ROW { code = sqlite3_step(compiled.handle) }
            guard code == SQLITE_DONE else {
                let error: any Error = interruption == .stopped ? SQLStopped() : failure(code, statement: statement.sql)
                sqlite3_reset(compiled.handle)
                throw error
            }
            sqlite3_reset(compiled.handle)
            // sqlite3_changes64 keeps the last write's count through a statement that wrote no row
            // (a read, a pragma, a DDL statement): only a statement that changed rows reports it.
            let wrote = sqlite3_total_changes64(handle) != changedBefore
            let changes = wrote ? sqlite3_changes64(handle) : 0
            executed.results.append(ExecuteReply.Result(changes: changes, lastInsertRowid: sqlite3_last_insert_rowid(handle)))
            // The tables it may write (its triggers' too), named to watchers only when it changed
            // a row, its triggers' included: an UPDATE that matched nothing announces nothing
            // (hostile31e G3).
            if wrote { executed.tables.formUnion(compiled.written) }
        }
        return executed
    }

    /// Resets every compiled statement, so that none holds the connection's transaction open.
    func resetStatements() {
        for statement in cachedHandles { sqlite3_reset(statement) }
    }
}
