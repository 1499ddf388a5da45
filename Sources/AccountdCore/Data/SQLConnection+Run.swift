import AccountdProtocol
import CSQLiteConfig

extension SQLConnection {
    /// A read that has begun: one statement stepping through its rows in one snapshot.
    public final class Cursor {
        private let connection: SQLConnection
        private let statement: OpaquePointer
        private let sql: String
        /// The result's column names.
        public let columns: [String]
        private var done = false
        /// For a cursor read over several pool jobs (``page(_:)``): what is left of the
        /// statement's time, and what stops it.
        private var left: Duration?
        private let stop: SQLStop?

        init(connection: SQLConnection, statement: OpaquePointer, sql: String, left: Duration? = nil, stop: SQLStop? = nil) {
            self.connection = connection
            self.statement = statement
            self.sql = sql
            self.left = left
            self.stop = stop
            columns = (0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) }
        }

        /// The next row, or nil at the end.
        ///
        /// - Throws: `QueryTimeout`, `SQLError`, or ``SQLStopped`` when the client went away.
        public func next() throws -> [SQLValue]? {
            guard !done else { return nil }
            let code = sqlite3_step(statement)
            switch code {
            case SQLITE_ROW:
                return (0..<Int32(columns.count)).map { connection.value(statement, $0) }
            case SQLITE_DONE:
                done = true
                return nil
            default:
                done = true
                if connection.interruption == .stopped { throw SQLStopped() }
                if connection.interruption == .overBudget {
                    // It will likely need more again: the next ones run where they may wait from the start.
                    connection.ranOverBudget(sql)
                    throw SQLOverBudget()
                }
                if connection.bounded && code & 0xFF == SQLITE_BUSY { throw SQLOverBudget() }
                throw connection.failure(code, statement: sql)
            }
        }

        /// Marks the statement as one that needs more than a bounded use may give (its rows
        /// are too large for an event loop): the next ones run where they may wait from the start.
        public func ranOverBudget() {
            connection.ranOverBudget(sql)
        }

        /// Steps rows into `take` until it returns true (its page is full) or the rows end, in
        /// one pool job of a cursor read over several (``SQLConnection/pagedQuery(_:timeout:stop:)``).
        /// Only the time SQLite spends stepping (and reading the row's values) counts against
        /// the statement's timeout: the time `take` spends encoding a row for the reply does
        /// not (20 values of 16 MB took longer to encode than the limit: hostile31c F10), nor
        /// does the time between pages, while the client reads. The statement, and its read
        /// transaction, stay as they are between pages.
        ///
        /// - Returns: true once the rows have ended.
        /// - Throws: `QueryTimeout` once the pages together ran longer than the timeout,
        ///   `SQLError`, ``SQLStopped``, or what `take` throws.
        public func page(_ take: ([SQLValue]) throws -> Bool) throws -> Bool {
            while true {
                let started = ContinuousClock.now
                if let left { connection.begin(deadline: started + left, stop: stop) }
                let row: [SQLValue]?
                do {
                    row = try next()
                } catch {
                    left = left.map { $0 - (.now - started) }
                    throw error
                }
                left = left.map { $0 - (.now - started) }
                guard let row else { return true }
                if try take(row) { return false }
            }
        }
    }
}

extension SQLConnection {
    /// A cursor over `statement`, which must only read, to be read a page at a time
    /// (``Cursor/page(_:)``), possibly on a different pool thread each time.
    ///
    /// - Parameters:
    ///   - timeout: how long its pages may step in all before `QueryTimeout`.
    ///   - stop: stops it when the client goes away.
    /// - Throws: `StatementNotAllowed`, `SQLError`, `InvalidParameter`.
    public func pagedQuery(_ statement: SQLStatement, timeout: Duration, stop: SQLStop?) throws(ProtocolError) -> Cursor {
        begin(deadline: .now + timeout, stop: stop)
        let compiled = try compile(statement.sql, mode: .query)
        try bind(statement.parameters, to: compiled.handle, sql: statement.sql)
        guardState.reset(.query)
        return Cursor(connection: self, statement: compiled.handle, sql: statement.sql, left: timeout, stop: stop)
    }

    /// A cursor over `statement`, which must only read.
    ///
    /// - Parameters:
    ///   - deadline: when the statement is stopped with `QueryTimeout`.
    ///   - stop: stops it when the client goes away.
    /// - Throws: `StatementNotAllowed`, `SQLError`, `InvalidParameter`.
    public func query(_ statement: SQLStatement, deadline: ContinuousClock.Instant?, stop: SQLStop?) throws(ProtocolError) -> Cursor {
        begin(deadline: deadline, stop: stop)
        let compiled = try compile(statement.sql, mode: .query)
        try bind(statement.parameters, to: compiled.handle, sql: statement.sql)
        guardState.reset(.query)
        return Cursor(connection: self, statement: compiled.handle, sql: statement.sql)
    }

    /// A cursor over `statement` for a caller that may not wait (an event loop), or nil when
    /// this connection has not compiled `statement` before (compiling is left to a thread
    /// that may wait) or when one step of it may do unbounded work (``stepsAreBounded(_:)``).
    ///
    /// The statement runs at most ``SQLConnection/boundedSteps`` virtual machine steps and
    /// ``SQLConnection/boundedTime``, calls no function (``SQLConnection/unboundedOpcodes``), and
    /// takes only locks it can have at once (no busy timeout); past either, its cursor throws
    /// ``SQLOverBudget`` and the caller runs the statement again where it may wait. ``finish()``
    /// ends the bound.
    ///
    /// - Throws: `StatementNotAllowed`, `InvalidParameter`, as ``query(_:deadline:stop:)``.
    public func queryAtOnce(_ statement: SQLStatement) throws(ProtocolError) -> Cursor? {
        guard isCompiledWithBoundedSteps(statement.sql) else { return nil }
        begin(deadline: nil, stop: nil, bounded: true)
        let compiled = try compile(statement.sql, mode: .query)
        // SQLite calls the progress handler each time the statement's step count, kept across
        // its runs, passes a multiple of `progressSteps`: counted from zero, the bound is whole.
        sqlite3_stmt_status(compiled.handle, SQLITE_STMTSTATUS_VM_STEP, 1)
        try bind(statement.parameters, to: compiled.handle, sql: statement.sql)
        guardState.reset(.query)
        return Cursor(connection: self, statement: compiled.handle, sql: statement.sql)
    }

    /// Finishes a use of the connection: resets its statements and forgets the deadline.
    public func finish() {
        for statement in cachedHandles { sqlite3_reset(statement) }
        end()
    }
}
