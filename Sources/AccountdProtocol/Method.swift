/// The methods of interface `io.accountd`.
public enum Method: String, CaseIterable, Sendable {
    case info = "Info"
    case ping = "Ping"
    case status = "Status"
    case list = "List"
    case switchAccount = "Switch"
    case export = "Export"
    case verify = "Verify"
    case plan = "Plan"
    case snapshots = "Snapshots"
    case restore = "Restore"
    case snapshot = "Snapshot"
    case remove = "Remove"
    case migrate = "Migrate"
    case get = "Get"
    case set = "Set"
    case delete = "Delete"
    case keys = "Keys"
    case watch = "Watch"
    case metrics = "Metrics"
    case replication = "Replication"
    case pull = "Pull"
    case query = "Query"
    case execute = "Execute"
    case importAccount = "Import"

    /// The interface every method belongs to.
    public static let interface = "io.accountd"

    /// How a method uses streamed replies (`more: true`).
    public enum Streaming: Sendable {
        /// One reply, always.
        case never
        /// Streams progress when asked, else answers once.
        case optional
        /// Only works with `more: true`; without it the reply is `ExpectedMore`.
        case required
    }

    /// `io.accountd.Switch`.
    public var qualifiedName: String { Self.interface + "." + rawValue }

    /// What a peer that is not an admin needs to call a method (SPEC section 12, "Accounts
    /// belong to people"). Admins may call every method.
    public enum Access: String, Sendable {
        /// Anyone who can connect. `List`, `Watch` and `Replication` then show a peer only
        /// the accounts it may read.
        case open
        /// A `read` or `write` grant on the account the call acts on (`Status` only with
        /// `account`; `Get` and `Keys` only of a per-account namespace: device-scoped ones
        /// are open).
        case read
        /// A `write` grant on the account the call acts on (`Set` and `Delete` of a
        /// device-scoped namespace are for admins).
        case write
        /// Admins only, whatever the grants.
        case admin
    }

    /// What a peer that is not an admin needs to call this method.
    public var access: Access {
        switch self {
        case .info, .ping, .metrics, .list, .watch, .replication: .open
        case .status, .get, .keys, .export, .query: .read
        case .switchAccount, .set, .delete, .snapshot, .execute: .write
        case .verify, .plan, .snapshots, .restore, .remove, .migrate, .pull, .importAccount: .admin
        }
    }

    /// Whether only an admin peer may call it, whatever the grants.
    public var requiresAdmin: Bool { access == .admin }

    public var streaming: Streaming {
        switch self {
        case .list, .export, .watch: .required
        case .switchAccount, .migrate, .query: .optional
        default: .never
        }
    }

    /// The parameters a request may carry, for validation.
    public var parameterNames: Set<String> {
        switch self {
        case .info, .ping, .watch, .metrics, .replication: []
        case .pull: ["account", "replica", "reclaim"]
        case .importAccount: ["account", "path", "rebind", "overReplica"]
        case .status: ["account"]
        case .list: ["details"]
        case .switchAccount: ["account", "create"]
        case .export: ["account", "format"]
        case .verify, .plan: ["account"]
        case .snapshots: ["account"]
        case .restore: ["account", "snapshot", "at", "reclaim"]
        case .snapshot: ["account", "label"]
        case .remove: ["account", "purge", "handoff"]
        case .migrate: ["accounts", "all", "canary", "maxFailures", "create", "canaryAccounts", "exclude", "rollbackTo"]
        case .get, .delete: ["namespace", "key", "account"]
        case .set: ["namespace", "key", "value", "account"]
        case .keys: ["namespace", "account"]
        case .query: ["account", "sql", "parameters", "maxRows", "migrate"]
        case .execute: ["account", "statements", "migrate"]
        }
    }

    /// Finds a method by its qualified name, e.g. `io.accountd.Status`.
    public init?(qualifiedName: String) {
        guard qualifiedName.hasPrefix(Self.interface + "."),
            let method = Method(rawValue: String(qualifiedName.dropFirst(Self.interface.count + 1)))
        else { return nil }
        self = method
    }

    /// Finds a method by its inline word, case-insensitively: `status`, `SWITCH`, `del`.
    public init?(inlineWord: String) {
        // Nearly every client writes the word in lower case: it is looked up as it is first.
        guard let method = Self.byInlineWord[inlineWord] ?? Self.byInlineWord[inlineWord.lowercased()] else { return nil }
        self = method
    }

    /// Each method by its inline word, lower-case, with `del` for `delete`.
    private static let byInlineWord: [String: Method] = Dictionary(
        uniqueKeysWithValues: allCases.map { ($0.rawValue.lowercased(), $0) } + [("del", .delete)])
}
