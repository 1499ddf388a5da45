import AccountdProtocol

/// The one error type of the core library.
///
/// Each error carries the facts a person needs to act: which account, which
/// file and line, which versions, and what to do next. ``kind`` is what programs
/// switch on; as a ``WireError`` it declares its wire form, the name being its kind's.
public struct AccountdError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a closed set that callers can compare against.
    ///
    /// A struct with a private code, so that adding a kind breaks no caller.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Code: String, Hashable, Sendable {
            case invalidAccountName, accountNotFound, accountTooNew, accountCorrupt, accountBusy, accountActive
            case migrationFailed, invalidBundle, snapshotNotFound, storage, accountExists, accountMoved, interrupted, withdrawn
        }
        private let code: Code
        private init(_ code: Code) { self.code = code }

        /// The name does not follow the account-name rules.
        public static let invalidAccountName = Kind(.invalidAccountName)
        /// No file exists for the account and creating one was not allowed.
        public static let accountNotFound = Kind(.accountNotFound)
        /// The file is at a newer version that this bundle cannot read.
        public static let accountTooNew = Kind(.accountTooNew)
        /// The file is not a sound accountd file for this account.
        public static let accountCorrupt = Kind(.accountCorrupt)
        /// Another operation holds the account.
        public static let accountBusy = Kind(.accountBusy)
        /// The account is the active one, and the operation (a removal) needs it not to be.
        public static let accountActive = Kind(.accountActive)
        /// A migration (or the creation of a new account) failed and was rolled back.
        public static let migrationFailed = Kind(.migrationFailed)
        /// The schema bundle was refused at load.
        public static let invalidBundle = Kind(.invalidBundle)
        /// A named snapshot does not exist.
        public static let snapshotNotFound = Kind(.snapshotNotFound)
        /// The account already has a file here, and the operation (a pull) would replace it.
        public static let accountExists = Kind(.accountExists)
        /// The account was handed off from this host (`Remove {handoff}`) and is served
        /// elsewhere until it is pulled back.
        public static let accountMoved = Kind(.accountMoved)
        /// The filesystem or SQLite failed in a way that is not the file's fault (disk full, permissions).
        public static let storage = Kind(.storage)
        /// Long work (a migration, a bundle's check) was stopped before it ended, because the
        /// daemon is stopping or a newer reload superseded it (``SQLiteInterrupt``); it was
        /// rolled back whole and is nobody's fault: the account is migrated at its next open.
        public static let interrupted = Kind(.interrupted)
        /// An open or a migration was stopped because a reload withdrew the bundle it ran under
        /// (``BundleWithdrawals``): rolled back whole, the file at its old version with all its
        /// rows; nobody's fault, and not the account's failure. On the wire `MigrationFailed`,
        /// whose message says so.
        public static let withdrawn = Kind(.withdrawn)

        public var description: String { code.rawValue }

        /// The protocol error name for this kind.
        public var wireName: ErrorName {
            switch code {
            case .invalidAccountName: .invalidAccountName
            case .accountNotFound: .accountNotFound
            case .accountTooNew: .accountTooNew
            case .accountCorrupt: .accountCorrupt
            case .accountBusy: .accountBusy
            case .accountActive: .accountActive
            case .migrationFailed, .withdrawn: .migrationFailed
            case .snapshotNotFound: .snapshotNotFound
            case .accountExists: .accountExists
            case .accountMoved: .accountMoved
            case .invalidBundle, .storage: .internalError
            case .interrupted: .shuttingDown
            }
        }
    }

    /// What went wrong.
    public var kind: Kind
    /// A sentence for humans: what happened and what to do.
    public var message: String
    /// The account concerned, if any.
    public var account: String?
    /// The file concerned, if any (a migration, a bundle file, an account file).
    public var file: String?
    /// The 1-based line in ``file``, if known.
    public var line: Int?
    /// The version the account was at, where versions matter.
    public var fromVersion: Int?
    /// The version the operation aimed for.
    public var toVersion: Int?
    /// Further facts, one per entry, such as each schema difference.
    public var details: [String]
    /// What is wrong with the file, in words that follow its path ("belongs to account
    /// \"rich\": ..."), for a refusal of a file (``corrupt(_:path:_:)``, a file too new): lets
    /// a caller that refused a copy of its own (a pull) say so in its own words. Not on the wire.
    public var reason: String?

    public init(
        _ kind: Kind, _ message: String, account: String? = nil, file: String? = nil,
        line: Int? = nil, fromVersion: Int? = nil, toVersion: Int? = nil, details: [String] = []
    ) {
        self.kind = kind
        self.message = message
        self.account = account
        self.file = file
        self.line = line
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.details = details
    }

    public var description: String {
        details.isEmpty ? message : message + "\n" + details.map { "  - " + $0 }.joined(separator: "\n")
    }
}

/// How a core error goes on the wire: its kind's name, its message, and every fact it carries.
extension AccountdError: WireError {
    /// The wire name of this error: its kind's (``Kind/wireName``).
    public var wireName: ErrorName { kind.wireName }
    /// ``message``.
    public var wireMessage: String { message }
    /// `account`, `file`, `line`, `fromVersion`, `toVersion` and `details`, those it has, in that order.
    public var wireFacts: [(String, JSONValue)] {
        var facts: [(String, JSONValue)] = []
        if let account { facts.append(("account", .string(account))) }
        if let file { facts.append(("file", .string(file))) }
        if let line { facts.append(("line", JSONValue(line))) }
        if let fromVersion { facts.append(("fromVersion", JSONValue(fromVersion))) }
        if let toVersion { facts.append(("toVersion", JSONValue(toVersion))) }
        if !details.isEmpty { facts.append(("details", .array(details.map { .string($0) }))) }
        return facts
    }
}

extension AccountdError {
    /// `account`'s file at `path` is not usable for `reason` (words following the path), with
    /// what to do: `AccountCorrupt`.
    public static func corrupt(_ account: AccountName, path: String, _ reason: String) -> AccountdError {
        var error = AccountdError(
            .accountCorrupt,
            "account \(account) is not usable: \(path) \(reason); the file was left untouched. "
                + "Restore a snapshot with 'accountctl restore \(account)' or move the file aside.",
            account: account.rawValue, file: path)
        error.reason = reason
        return error
    }

    /// A file that cannot be read or written now for the disk's sake (`reason`, e.g. "the disk
    /// is full"): the file is neither judged nor changed, and the same request succeeds once
    /// the disk is back. Never `accountCorrupt`, whose advice (restore, move the file aside)
    /// would be wrong for a sound file.
    static func diskProblem(_ account: AccountName, path: String, _ reason: String) -> AccountdError {
        AccountdError(
            .storage,
            "account \(account) cannot be used now: \(reason), at \(path). The file was not changed and is not corrupt; "
                + "free space on (or repair) the disk that holds the data root, then try again",
            account: account.rawValue, file: path)
    }

    static func storage(_ what: String, path: String, errno code: Int32) -> AccountdError {
        AccountdError(.storage, "\(what) \(path) failed: \(String(cString: strerror(code)))", file: path)
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
