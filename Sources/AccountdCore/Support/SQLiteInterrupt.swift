import GRDB
import CSQLiteConfig
import Synchronization

/// Stops SQLite work that may run without end: a migration's transaction, a bundle's check
/// on an empty database. Such work is bundle SQL, and a bundle may hold a statement that
/// never finishes on some data (a recursive CTE counting to billions).
///
/// The connection doing the work has a progress handler (``run(on:_:)``) that asks, every
/// ``progressSteps`` virtual machine steps, whether the work must stop: because ``stop()``
/// was called for it (a newer SIGHUP supersedes a reload's check), or because the daemon is
/// stopping (``stopAll()``, at SIGTERM). SQLite then fails the running statement with
/// `SQLITE_INTERRUPT` and rolls the transaction back whole, as `sqlite3_interrupt` would; unlike
/// `sqlite3_interrupt`, a handler also stops a statement that starts after the call, so no
/// statement of a script slips through between two others.
public final class SQLiteInterrupt: Sendable {
    private let stopped = Atomic<Bool>(false)

    /// Set once the daemon stops: every interruptible work from then on stops at once.
    private static let stopping = Atomic<Bool>(false)

    /// How many SQLite virtual machine steps run between two checks.
    static let progressSteps: Int32 = 1000

    /// The interrupt this one is part of: stopping it stops this one too.
    private let parent: SQLiteInterrupt?
    /// When the work must stop whatever else happens; nil for no time limit.
    private let deadline: ContinuousClock.Instant?
    /// The time limit the work was given (``init(within:timeLimit:)``); nil for none.
    public let timeLimit: Duration?

    public init() {
        parent = nil
        deadline = nil
        timeLimit = nil
    }

    /// An interrupt that also stops when `parent` does, and once `timeLimit` has passed from
    /// now (a bundle's check, `schema.checkTimeoutSeconds`).
    public init(within parent: SQLiteInterrupt, timeLimit: Duration) {
        self.parent = parent
        self.timeLimit = timeLimit
        deadline = .now + timeLimit
    }

    /// Asks the work to stop; it does within ``progressSteps`` virtual machine steps.
    public func stop() { stopped.store(true, ordering: .relaxed) }

    /// Whether the time limit has passed.
    public var isPastDeadline: Bool { deadline.map { ContinuousClock.now >= $0 } ?? false }

    /// Whether the work must stop now: ``stop()`` was called (here or on the parent), the
    /// daemon is stopping, or the time limit has passed.
    public var isStopped: Bool {
        stopped.load(ordering: .relaxed) || Self.isStopping || (parent?.isStopped ?? false) || isPastDeadline
    }

    /// Stops every interruptible work of the process, running or to come: the daemon is
    /// stopping (SIGTERM). A migration so stopped rolls back whole; the file stays at its old
    /// version with all its rows, and is migrated at its next open.
    public static func stopAll() { stopping.store(true, ordering: .relaxed) }

    /// Whether ``stopAll()`` was called.
    public static var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Runs `body` on `db` with this interrupt's progress handler in place, and removes it after.
    func run<T>(on db: Database, _ body: () throws -> T) throws -> T {
        guard let connection = db.sqliteConnection else { return try body() }
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_progress_handler(
            connection, Self.progressSteps,
            { context in
                Unmanaged<SQLiteInterrupt>.fromOpaque(context!).takeUnretainedValue().isStopped ? 1 : 0
            }, context)
        defer { sqlite3_progress_handler(connection, 0, nil, nil) }
        return try withExtendedLifetime(self) { try body() }
    }
}
