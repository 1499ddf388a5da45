/// The reply to `Status` without an account: the active account and the daemon's state.
public struct DaemonStatus: ReplyModel {
    enum Key: String { case active, state, version, bundleVersion, problem, migrationsRunning, oldestMigrationSeconds, bundleCheckSeconds }

    /// The daemon's states, as `state` names them.
    public enum State: String, Sendable, CaseIterable {
        /// No account is active; `problem` says why when the saved active account could not
        /// be opened at start-up.
        case idle
        /// At start-up: the saved active account is not open yet (another process holds
        /// it locked); the daemon tries again in the background. `problem` says why.
        case opening
        /// The active account is being migrated.
        case migrating
        /// The active account is at the bundle's version, or newer and readable by it.
        case ready
        /// The active account is older than the bundle, and no migration of it runs
        /// (for a moment, while a reload's migration of it begins).
        case outdated
        /// The last attempt to bring the active account to the bundle failed; `problem` has
        /// the error. `version` is the version the file stayed at.
        case failed
        /// The active account's file is newer than the bundle and not readable by it (an
        /// older bundle was loaded); calls on it answer `AccountTooNew`.
        case tooNew = "too_new"
    }

    /// The active account, or nil when none is.
    public var active: String?
    /// One of ``State``'s names: `idle`, `opening`, `migrating`, `ready`, `outdated`,
    /// `failed` or `too_new`.
    public var state: String
    /// The active account's schema version, as its file has it, or nil.
    public var version: Int?
    /// The bundle's target version.
    public var bundleVersion: Int
    /// Why the state is `failed`, `too_new` or `opening`, or `idle` after the saved account
    /// could not be opened: the error, in words; left out otherwise.
    public var problem: String?
    /// Migrations of any account running now (a `Migrate`, another caller's switch), the
    /// caller's own active account or not; the key is left out when none runs.
    public var migrationsRunning: Int?
    /// How long the oldest of them has run, in whole seconds; left out with them.
    public var oldestMigrationSeconds: Int?
    /// While a reload checks a new bundle (its migrations run on an empty database): how long
    /// the check has run, in whole seconds; the key is left out when no reload runs.
    public var bundleCheckSeconds: Int?

    /// ``state`` as a ``State``; nil for a state this client does not know (from a newer daemon).
    public var condition: State? { State(rawValue: state) }

    public init(active: String?, state: String, version: Int?, bundleVersion: Int, problem: String? = nil) {
        self.active = active
        self.state = state
        self.version = version
        self.bundleVersion = bundleVersion
        self.problem = problem
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Status")
        active = try reader.optionalString(Key.active)
        state = try reader.string(Key.state)
        version = try reader.optionalInt(Key.version)
        bundleVersion = try reader.int(Key.bundleVersion)
        problem = try reader.optionalString(Key.problem)
        migrationsRunning = try reader.optionalInt(Key.migrationsRunning)
        oldestMigrationSeconds = try reader.optionalInt(Key.oldestMigrationSeconds)
        bundleCheckSeconds = try reader.optionalInt(Key.bundleCheckSeconds)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.active, JSONValue(active))
        object.add(Key.state, .string(state))
        object.add(Key.version, JSONValue(version))
        object.add(Key.bundleVersion, JSONValue(bundleVersion))
        object.addIfPresent(Key.problem, problem.map { .string($0) })
        object.addIfPresent(Key.migrationsRunning, migrationsRunning.map(JSONValue.init))
        object.addIfPresent(Key.oldestMigrationSeconds, oldestMigrationSeconds.map(JSONValue.init))
        object.addIfPresent(Key.bundleCheckSeconds, bundleCheckSeconds.map(JSONValue.init))
        return object.value
    }
}
