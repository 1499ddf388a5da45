/// A validated label for a snapshot taken on demand (`Snapshot {account, label}`).
///
/// The label becomes the last part of the snapshot's name,
/// `<timestamp>-v<version>-<label>`, and so of a file name under
/// `snapshots/<account>/`. It is 1 to 48 characters from `A-Z a-z 0-9 . _ -` and
/// begins with a letter or a digit, which keeps every snapshot name safe as a file
/// name and easy to type. It may not begin with one of ``reserved``, the labels of the
/// daemon's own safety copies: a label that looked like one could pass for the copy a
/// recovery needs. The daemon and `accountctl` check it with the same rule.
public struct SnapshotLabel: Hashable, Sendable, CustomStringConvertible {
    /// The longest label accepted, in characters.
    public static let maximumLength = 48

    /// The beginnings of the daemon's own snapshot labels, which no label on demand may have.
    public static let reserved = ["before-migrate", "before-restore", "before-remove"]

    /// The label of a snapshot taken on demand without one.
    public static let manual = SnapshotLabel(checked: "manual")

    /// The label as given; always valid.
    public let rawValue: String

    /// Validates `rawValue` as a snapshot label.
    ///
    /// - Throws: `InvalidParameter` (parameter `label`) saying which rule it breaks.
    public init(_ rawValue: String) throws(ProtocolError) {
        if let reason = Self.problem(in: rawValue) {
            throw ProtocolError(
                .invalidParameter, "snapshot label \(AccountName.quoted(rawValue)) is refused: \(reason)",
                facts: [("parameter", .string("label"))])
        }
        self.rawValue = rawValue
    }

    private init(checked: String) { rawValue = checked }

    public var description: String { rawValue }

    /// Returns why `label` is not a valid snapshot label, or nil when it is.
    public static func problem(in label: String) -> String? {
        let scalars = label.unicodeScalars
        guard let first = scalars.first else { return "a label may not be empty" }
        if scalars.count > maximumLength {
            return "a label is at most \(maximumLength) characters, this one has \(scalars.count)"
        }
        if !isLetterOrDigit(first) {
            return "a label must begin with a letter or a digit"
        }
        if let taken = reserved.first(where: { label.lowercased().hasPrefix($0) }) {
            return "labels beginning with '\(taken)' are the daemon's own (the copy it takes before a migration, restore or remove); choose another"
        }
        if scalars.contains(where: { !isLetterOrDigit($0) && $0 != "." && $0 != "_" && $0 != "-" }) {
            return "use only A-Z a-z 0-9 . _ - (at most \(maximumLength) characters)"
        }
        return nil
    }

    private static func isLetterOrDigit(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9": true
        default: false
        }
    }
}
