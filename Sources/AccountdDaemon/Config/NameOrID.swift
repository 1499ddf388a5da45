/// A user or group in the config, by name or by numeric id.
///
/// `alice` is the user named alice, `1000` the id 1000 and `+1000` always the id 1000. Names
/// made of digits exist (`useradd --badname 31337`), so a plain number that is also the
/// name of a user or group with another id is refused as ambiguous rather than quietly
/// taken as the id, which would give the rights to someone else.
enum NameOrID {
    /// The id `text` names.
    ///
    /// - Parameter lookup: the id of a name (`getpwnam` or `getgrnam`), nil when there is none.
    /// - Returns: nil when `text` is neither a number nor an existing name.
    /// - Throws: a message when `text` is a number and also another id's name.
    static func resolve(_ text: String, kind: String, lookup: (String) -> UInt32?) throws(Ambiguous) -> UInt32? {
        let text = text.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("+"), let id = UInt32(text.dropFirst()) { return id }
        guard let id = UInt32(text) else { return text.isEmpty ? nil : lookup(text) }
        if let named = lookup(text), named != id {
            throw Ambiguous(
                message:
                    "'\(text)' is both the id \(id) and the name of the \(kind) with id \(named); write +\(id) for the id, or +\(named) for the \(kind) named \(text)")
        }
        return id
    }

    /// A number that is also another id's name.
    struct Ambiguous: Error {
        var message: String
    }
}
