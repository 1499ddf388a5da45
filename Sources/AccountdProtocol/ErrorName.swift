/// The error names that go on the wire.
///
/// The name is for programs and never changes; the message that travels with it
/// is for humans. Every error the daemon can send is listed here, so that the
/// daemon and `accountctl` agree on one spelling.
public struct ErrorName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// The name without its interface prefix, e.g. `AccountTooNew`.
    public var shortName: String {
        rawValue.split(separator: ".").last.map(String.init) ?? rawValue
    }

    private static func accountd(_ name: String) -> ErrorName {
        ErrorName(rawValue: "io.accountd.\(name)")
    }

    public static let invalidAccountName = accountd("InvalidAccountName")
    public static let accountNotFound = accountd("AccountNotFound")
    public static let accountTooNew = accountd("AccountTooNew")
    public static let accountCorrupt = accountd("AccountCorrupt")
    public static let accountBusy = accountd("AccountBusy")
    /// `Remove` was asked for the active account; switch to another account first.
    public static let accountActive = accountd("AccountActive")
    public static let migrationFailed = accountd("MigrationFailed")
    /// `Pull` was asked for an account that already has a file here; nothing was touched.
    public static let accountExists = accountd("AccountExists")
    /// The account was handed off from this host (`Remove {handoff: true}`); it is served by
    /// the host that pulled it, and this one refuses it until it is pulled back.
    public static let accountMoved = accountd("AccountMoved")
    public static let noActiveAccount = accountd("NoActiveAccount")
    public static let namespaceNotFound = accountd("NamespaceNotFound")
    public static let keyNotFound = accountd("KeyNotFound")
    public static let invalidValue = accountd("InvalidValue")
    public static let permissionDenied = accountd("PermissionDenied")
    public static let requestTooLarge = accountd("RequestTooLarge")
    public static let invalidRequest = accountd("InvalidRequest")
    public static let shuttingDown = accountd("ShuttingDown")
    /// The daemon serves `limits.maxConnections` connections already; this one is closed.
    public static let tooManyConnections = accountd("TooManyConnections")
    /// A snapshot named in `Restore` does not exist.
    public static let snapshotNotFound = accountd("SnapshotNotFound")
    /// `Query` or `Execute` was given a statement its guard refuses (DDL, ATTACH, a pragma that
    /// changes state, a write to `accountd_*` or `sqlite_*`, transaction control, or a write in
    /// a `Query`); the file is unchanged.
    public static let statementNotAllowed = accountd("StatementNotAllowed")
    /// SQLite refused or failed a statement of `Query` or `Execute`: its message and extended result code.
    public static let sqlError = accountd("SQLError")
    /// A statement ran longer than `limits.queryTimeoutMs` and was interrupted; nothing of an `Execute` was kept.
    public static let queryTimeout = accountd("QueryTimeout")
    /// Something failed inside the daemon; the details are in its log, never on the wire.
    public static let internalError = accountd("InternalError")

    public static let methodNotFound = ErrorName(rawValue: "org.varlink.service.MethodNotFound")
    /// A varlink call named an interface other than `io.accountd` and `org.varlink.service`.
    public static let interfaceNotFound = ErrorName(rawValue: "org.varlink.service.InterfaceNotFound")
    public static let invalidParameter = ErrorName(rawValue: "org.varlink.service.InvalidParameter")
    public static let expectedMore = ErrorName(rawValue: "org.varlink.service.ExpectedMore")

    /// Every error of interface `io.accountd`, as declared in `io.accountd.varlink`.
    public static let accountdErrors: [ErrorName] = [
        .invalidAccountName, .accountNotFound, .accountTooNew, .accountCorrupt, .accountBusy, .accountActive,
        .migrationFailed, .noActiveAccount, .namespaceNotFound, .keyNotFound, .invalidValue, .permissionDenied,
        .requestTooLarge, .invalidRequest, .shuttingDown, .tooManyConnections, .snapshotNotFound, .internalError, .accountExists,
        .statementNotAllowed, .sqlError, .queryTimeout, .accountMoved,
    ]
}
