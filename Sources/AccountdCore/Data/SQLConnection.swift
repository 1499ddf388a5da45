import AccountdProtocol
import CSQLiteConfig
import Foundation

/// One SQLite connection to an account's file for an app's statements (`Query`, `Execute`).
///
/// These connections use SQLite's C API directly, not GRDB: GRDB keeps its own authorizer
/// on each connection for its observation features, and the guard here must be the only
/// one (``StatementGuard``). Each connection is set up once:
/// `SQLITE_DBCONFIG_DEFENSIVE` on, extension loading off, a busy timeout, and `trusted_schema`
/// on: the schema is the bundle's (the guard refuses every statement that would change it), and
/// its triggers and views may use FTS5 or R*Tree tables, which SQLite refuses there otherwise; a writer also gets `synchronous = FULL` and `foreign_keys = ON`, a reader is
/// opened read-only. Compiled statements are kept (at most ``statementCacheSize``), so a
/// statement an app repeats is compiled once per connection.
///
/// A connection is used by one thread at a time: the cache hands it to one request and
/// takes it back after (``SQLConnectionCache``), which is what makes the unchecked
/// `Sendable` sound. Only ``SQLStop`` crosses threads, and it is atomic.
public final class SQLConnection: @unchecked Sendable {
    /// A compiled statement and what compiling it found.
    final class Compiled {
        let handle: OpaquePointer
        /// Tables it inserts into, updates or deletes from, as the authorizer saw.
        let written: Set<String>
        /// Whether each step of its program does a bounded amount of work, so that a bounded
        /// use may run it (``SQLConnection/stepsAreBounded(_:)``).
        var stepsAreBounded = false
        var used: UInt64

        init(handle: OpaquePointer, written: Set<String>, used: UInt64) {
            self.handle = handle
            self.written = written
            self.used = used
        }
    }

    /// Every compiled statement's handle.
    var cachedHandles: [OpaquePointer] { compiled.values.map(\.handle) }

    /// Why a statement was interrupted.
    enum Interruption {
        case timeout
        case stopped
        /// A bounded use ran out of its steps (``SQLOverBudget``).
        case overBudget
    }

    static let statementCacheSize = 32
    /// How many SQLite virtual machine steps run between two checks of the deadline and the
    /// stop: few, as one step may call a function over a value of up to
    /// ``maximumValueBytes`` (tens of milliseconds), and the deadline must hold to within a
    /// few such steps.
    static let progressSteps: Int32 = 16
    /// How many steps a bounded use (a read on an event loop) runs at most.
    static let boundedSteps = 1000
    /// How long a bounded use runs at most, whatever its steps.
    static let boundedTime = Duration.milliseconds(2)
    /// How long a statement waits for a lock another connection holds (SQLite's busy timeout),
    /// unless the owner says otherwise (``waitForLocks(upTo:)``).
    static let busyTimeoutMs: Int32 = 10_000
    /// This connection's busy timeout, in milliseconds, outside a bounded use.
    private(set) var busyMs: Int32 = SQLConnection.busyTimeoutMs

    let handle: OpaquePointer
    public let path: String
    public let readOnly: Bool
    /// The file's device and inode when opened: a file replaced since (a restore) needs a new connection.
    let identity: FileIdentity
    /// The cache generation it was opened in (``SQLConnectionCache``).
    var generation: UInt64 = 0
    var lastUsed: UInt64 = 0
    var guardState = StatementGuard()
    private var compiled: [String: Compiled] = [:]
    private var clock: UInt64 = 0
    private var deadline: ContinuousClock.Instant?
    /// A bounded use's progress checks so far, and when it began.
    private var boundedChecks = 0
    private var boundedSince = ContinuousClock.now
    private var stop: SQLStop?
    private(set) var interruption: Interruption?
    /// Whether this use may not wait: it stops at the first progress check and takes no lock it
    /// cannot have at once (see ``queryAtOnce(_:)``).
    private(set) var bounded = false

    /// The largest text or blob a statement may make or read (`SQLITE_LIMIT_LENGTH`): a reply
    /// carries a value whole, so this bounds the memory one request can take.
    public static let maximumValueBytes = 16 << 20

    /// Opens the account file at `path`; a missing file is never created.
    ///
    /// - Parameter busy: how long statements wait for another process's lock; nil: ``busyTimeoutMs``.
    /// - Throws: `SQLError` when SQLite cannot open or set up the connection.
    init(path: String, readOnly: Bool, busy: Duration? = nil) throws(ProtocolError) {
        guard let identity = FileIdentity(path: path) else {
            throw ProtocolError(.sqlError, "the account file \(path) is gone", facts: [("code", JSONValue(Int(SQLITE_CANTOPEN))), ("statement", "")])
        }
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX
        let opened = sqlite3_open_v2(path, &db, flags, nil)
        guard opened == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw ProtocolError(
                .sqlError, "opening account file \(path) failed: \(message)", facts: [("code", JSONValue(Int(opened))), ("statement", "")])
        }
        handle = db
        self.path = path
        self.readOnly = readOnly
        self.identity = identity
        sqlite3_extended_result_codes(db, 1)
        _ = accountd_sqlite3_defensive_on(db)
        _ = accountd_sqlite3_trusted_schema_on(db)
        _ = accountd_sqlite3_load_extension_off(db)
        if let busy { busyMs = Self.milliseconds(busy) }
        sqlite3_busy_timeout(db, busyMs)
        sqlite3_limit(db, SQLITE_LIMIT_LENGTH, Int32(Self.maximumValueBytes))
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_set_authorizer(
            db,
            { context, action, first, second, _, trigger in
                let connection = Unmanaged<SQLConnection>.fromOpaque(context!).takeUnretainedValue()
                return connection.guardState.authorize(
                    action, first.map { String(cString: $0) }, second.map { String(cString: $0) }, trigger.map { String(cString: $0) })
            }, context)
        sqlite3_progress_handler(
            db, Self.progressSteps,
            { context in
                Unmanaged<SQLConnection>.fromOpaque(context!).takeUnretainedValue().shouldInterrupt() ? 1 : 0
            }, context)
        do {
            try run("PRAGMA trusted_schema = ON")
            if !readOnly {
                try run("PRAGMA synchronous = FULL")
                try run("PRAGMA foreign_keys = ON")
                // The WAL is cut back after a large Execute (accounts.walMaxBytes).
                try run("PRAGMA journal_size_limit = \(Connections.walSizeLimit.load(ordering: .relaxed))")
            }
        } catch {
            close()
            throw error
        }
    }

    /// Finalizes every statement and closes the connection (the last one to close checkpoints the
    /// WAL). Blocking: on a pool thread.
    public func close() {
        for statement in compiled.values { sqlite3_finalize(statement.handle) }
        compiled.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Begins a use of the connection: statements stop at `deadline` or when `stop` says so;
    /// a `bounded` use stops after ``boundedSteps`` steps or ``boundedTime`` and never waits for a lock.
    func begin(deadline: ContinuousClock.Instant?, stop: SQLStop?, bounded: Bool = false) {
        self.deadline = deadline
        self.stop = stop
        interruption = nil
        if bounded {
            boundedChecks = 0
            boundedSince = .now
        }
        if bounded != self.bounded {
            sqlite3_busy_timeout(handle, bounded ? 0 : busyMs)
            self.bounded = bounded
        }
    }

    /// Sets how long this connection's statements wait for another process's lock on the file
    /// (`accounts.lockTimeoutSeconds`, which a reload may change); between uses.
    func waitForLocks(upTo busy: Duration) {
        let milliseconds = Self.milliseconds(busy)
        guard milliseconds != busyMs else { return }
        busyMs = milliseconds
        if !bounded { sqlite3_busy_timeout(handle, busyMs) }
    }

    /// `duration` in whole milliseconds, within `Int32`.
    private static func milliseconds(_ duration: Duration) -> Int32 {
        let total = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(total, 0))
    }

    /// Ends a use: no deadline, no stop, no bound.
    func end() {
        deadline = nil
        stop = nil
        if bounded {
            sqlite3_busy_timeout(handle, busyMs)
            bounded = false
        }
    }

    private func shouldInterrupt() -> Bool {
        if bounded {
            boundedChecks += 1
            if boundedChecks * Int(Self.progressSteps) >= Self.boundedSteps || ContinuousClock.now - boundedSince > Self.boundedTime {
                interruption = .overBudget
                return true
            }
            return false
        }
        if let stop, stop.isStopped {
            interruption = .stopped
            return true
        }
        if let deadline, ContinuousClock.now > deadline {
            interruption = .timeout
            return true
        }
        return false
    }

    /// Runs one of the daemon's own statements, unguarded.
    func run(_ sql: String) throws(ProtocolError) {
        guardState.reset(.daemon)
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw failure(code, statement: sql) }
    }

    /// The compiled form of an app's `sql` under `mode`'s rules.
    ///
    /// - Throws: `StatementNotAllowed` when the guard refuses it, when it is more than one
    ///   statement, or when a `Query` statement would write; `SQLError` when SQLite cannot compile it.
    func compile(_ sql: String, mode: StatementGuard.Mode) throws(ProtocolError) -> Compiled {
        clock += 1
        guardState.reset(mode)
        if let nul = sql.utf8.firstIndex(of: 0) {
            // SQLite would stop reading at the NUL, and run less than the text says.
            let offset = sql.utf8.distance(from: sql.utf8.startIndex, to: nul)
            throw Self.notAllowed("the text holds a NUL character at byte \(offset); SQL text cannot contain one (bind the value as a parameter)", sql)
        }
        if let cached = compiled[sql] {
            cached.used = clock
            return cached
        }
        guardState.writtenTables = []
        var statement: OpaquePointer?
        var tail: UnsafePointer<CChar>?
        let code = sql.withCString { text in
            let code = sqlite3_prepare_v3(handle, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            if code == SQLITE_OK, let tail, !Self.isBlank(tail) {
                sqlite3_finalize(statement)
                statement = nil
                return SQLITE_MISUSE
            }
            return code
        }
        if code == SQLITE_MISUSE { throw Self.notAllowed("give one statement per sql: the text goes on after its first statement", sql) }
        if let refusal = guardState.refusal {
            sqlite3_finalize(statement)
            throw Self.notAllowed(refusal, sql)
        }
        guard code == SQLITE_OK else { throw failure(code, statement: sql) }
        guard let statement else { throw Self.notAllowed("the text holds no statement", sql) }
        if mode == .query && sqlite3_stmt_readonly(statement) == 0 {
            sqlite3_finalize(statement)
            throw Self.notAllowed("a Query only reads; use Execute to change rows", sql)
        }
        let entry = Compiled(handle: statement, written: guardState.writtenTables, used: clock)
        if mode == .query { entry.stepsAreBounded = stepsAreBounded(sql) }
        compiled[sql] = entry
        if compiled.count > Self.statementCacheSize, let oldest = compiled.min(by: { $0.value.used < $1.value.used }) {
            sqlite3_finalize(oldest.value.handle)
            compiled[oldest.key] = nil
        }
        return entry
    }

    /// Whether `sql` is compiled on this connection already, with steps that are each bounded.
    func isCompiledWithBoundedSteps(_ sql: String) -> Bool { compiled[sql]?.stepsAreBounded == true }

    /// Notes that `sql` ran out of a bounded use's steps: it is not run bounded again on this connection.
    func ranOverBudget(_ sql: String) { compiled[sql]?.stepsAreBounded = false }

    /// Opcodes one step of which may walk a whole table or leave SQLite: `count(*)` counts a
    /// table's b-tree in one step, `PRAGMA integrity_check` reads the file in one, and a
    /// virtual table (`json_each`, `pragma_table_info`, FTS) runs its own code in each step.
    /// A function's call is one step however much it does (`hex(randomblob(8000000))`), so a
    /// statement that calls any is not run bounded either.
    static let unboundedOpcodes: Set<String> = [
        "Count", "IntegrityCk", "VOpen", "VFilter", "VNext", "VColumn", "VInitIn", "VCheck",
        "Function", "PureFunc", "AggStep", "AggStep1", "AggValue", "AggInverse", "AggFinal",
    ]

    /// Whether the program of `sql` (read with `EXPLAIN`) has none of ``unboundedOpcodes``:
    /// then ``boundedSteps`` steps do a bounded amount of work (each step reads at most a
    /// few pages, or one value of at most ``maximumValueBytes``). False when it cannot tell.
    func stepsAreBounded(_ sql: String) -> Bool {
        let mode = guardState.mode
        guardState.reset(.daemon)
        defer { guardState.reset(mode) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, "EXPLAIN " + sql, -1, &statement, nil) == SQLITE_OK, let statement else { return false }
        defer { sqlite3_finalize(statement) }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                guard let text = sqlite3_column_text(statement, 1) else { return false }
                if Self.unboundedOpcodes.contains(String(cString: text)) { return false }
            case SQLITE_DONE:
                return true
            default:
                return false
            }
        }
    }

    /// Whether the text after a statement holds nothing but spaces, semicolons and comments.
    static func isBlank(_ text: UnsafePointer<CChar>) -> Bool {
        var p = text
        while p.pointee != 0 {
            switch UInt8(bitPattern: p.pointee) {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0C, UInt8(ascii: ";"):
                p += 1
            case UInt8(ascii: "-") where UInt8(bitPattern: p[1]) == UInt8(ascii: "-"):
                while p.pointee != 0 && p.pointee != 0x0A { p += 1 }
            case UInt8(ascii: "/") where UInt8(bitPattern: p[1]) == UInt8(ascii: "*"):
                p += 2
                while p.pointee != 0 && !(p.pointee == 0x2A && p[1] == 0x2F) { p += 1 }
                if p.pointee != 0 { p += 2 }
            default:
                return false
            }
        }
        return true
    }

    /// The error for SQLite's `code`: a timeout or a stop when the progress handler interrupted
    /// the statement, else `SQLError` with SQLite's message and extended code.
    func failure(_ code: Int32, statement: String) -> ProtocolError {
        if code == SQLITE_INTERRUPT, interruption == .timeout {
            return ProtocolError(.queryTimeout, "the statement ran longer than limits.queryTimeoutMs and was stopped", facts: [])
        }
        if code & 0xFF == SQLITE_AUTH, let refusal = guardState.refusal {
            // Refused while running: VACUUM attaches its target as it runs, for one.
            return Self.notAllowed(refusal, statement)
        }
        let extended = sqlite3_extended_errcode(handle)
        var message = String(cString: sqlite3_errmsg(handle))
        if code & 0xFF == SQLITE_TOOBIG {
            message += " (a statement may make or read a text or blob of at most \(Self.maximumValueBytes >> 20) MiB; keep larger files beside the database)"
        }
        return ProtocolError(
            .sqlError, "SQLite: \(message)", facts: [("code", JSONValue(Int(extended))), ("statement", .string(Self.quoted(statement)))])
    }

    static func notAllowed(_ reason: String, _ sql: String) -> ProtocolError {
        ProtocolError(.statementNotAllowed, "statement not allowed: \(reason); the file was not changed", facts: [("statement", .string(quoted(sql)))])
    }

    /// A statement as errors quote it: at most 1,024 characters.
    static func quoted(_ sql: String) -> String {
        sql.count <= 1024 ? sql : String(sql.prefix(1024)) + "…"
    }
}

/// A file's device and inode: which file a path names now.
struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64

    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
