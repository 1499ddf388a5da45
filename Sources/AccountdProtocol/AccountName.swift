/// A validated account name.
///
/// Account names are 1 to 128 characters from `A-Z a-z 0-9 @ . _ + -`, and may
/// not begin with `.` or `-`. The rule keeps every name safe to use as a file
/// name (no `/`, no `..`, no NUL, no spaces or control characters) and leaves
/// names that begin with `.` free for the store's own temporary files.
///
/// Validation is pure: it never touches the filesystem, so a name is refused
/// before any path is built from it.
///
/// ```swift
/// let alice = try AccountName("alice@example.org")
/// ```
public struct AccountName: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The longest name accepted, in characters.
    public static let maximumLength = 128

    /// The name as the user wrote it; always valid.
    public let rawValue: String

    /// Validates `rawValue` as an account name.
    ///
    /// - Throws: ``InvalidAccountName`` saying which rule the name breaks.
    public init(_ rawValue: String) throws(InvalidAccountName) {
        if let reason = Self.problem(in: rawValue) {
            throw InvalidAccountName(name: rawValue, reason: reason)
        }
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    public static func < (lhs: AccountName, rhs: AccountName) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// Returns why `name` is not a valid account name, or nil when it is.
    public static func problem(in name: String) -> String? {
        let scalars = name.unicodeScalars
        if scalars.isEmpty {
            return "an account name may not be empty"
        }
        if scalars.count > maximumLength {
            return "an account name is at most \(maximumLength) characters, this one has \(scalars.count)"
        }
        if let first = scalars.first, first == "." || first == "-" {
            return "an account name may not begin with '\(first)'"
        }
        for scalar in scalars where !isAllowed(scalar) {
            return "an account name may not contain \(describe(scalar)); use only A-Z a-z 0-9 @ . _ + -"
        }
        return nil
    }

    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "@", ".", "_", "+", "-": true
        default: false
        }
    }

    private static func describe(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "/": "'/'"
        case " ": "a space"
        case "\0": "a NUL byte"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                "a control character (U+\(String(scalar.value, radix: 16, uppercase: true)))"
            } else {
                "'\(scalar)'"
            }
        }
    }
}

/// The error thrown for a string that is not a valid ``AccountName``.
public struct InvalidAccountName: Error, Hashable, Sendable, CustomStringConvertible {
    /// The refused name, exactly as given.
    public let name: String
    /// Which rule it breaks, in words.
    public let reason: String

    public var description: String {
        "invalid account name \(AccountName.quoted(name)): \(reason)"
    }
}

extension AccountName {
    /// Validates a name given in a request, failing with the error the daemon replies with:
    /// `InvalidAccountName`, its message saying which rule the name breaks, and the refused
    /// name as the fact `account`.
    ///
    /// The daemon checks every account parameter with this, and `AccountdClient` checks
    /// the names it is given with it before sending, so both refuse a name alike.
    ///
    /// - Throws: ``ProtocolError`` `InvalidAccountName`.
    public init(requested rawValue: String) throws(ProtocolError) {
        do {
            try self.init(rawValue)
        } catch {
            throw ProtocolError(error)
        }
    }
}

extension ProtocolError {
    /// The error reply for a refused account name: `InvalidAccountName`, with the
    /// refused name as the fact `account`.
    public init(_ error: InvalidAccountName) {
        self.init(error.wireName, error.wireMessage, facts: error.wireFacts)
    }
}

extension AccountName {
    /// Quotes a possibly hostile name for a message: control characters are escaped,
    /// and very long names are shortened.
    public static func quoted(_ name: String) -> String {
        var out = ""
        for scalar in name.unicodeScalars.prefix(64) {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else if scalar == "\"" || scalar == "\\" {
                out += "\\\(scalar)"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if name.unicodeScalars.count > 64 { out += "…" }
        return "\"\(out)\""
    }
}
