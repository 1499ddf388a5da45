/// An error that goes on the wire: a name for programs, a message for humans, and facts.
public struct ProtocolError: Error, Sendable, CustomStringConvertible {
    public var name: ErrorName
    public var message: String
    /// Further reply parameters, such as `parameter`, `account`, `fromVersion`.
    public var facts: [(String, JSONValue)]

    public init(_ name: ErrorName, _ message: String, facts: [(String, JSONValue)] = []) {
        self.name = name
        self.message = message
        self.facts = facts
    }

    public var description: String { "\(name.shortName): \(message)" }

    /// Decodes an error reply, as a client receives it: the name, the `message`, and
    /// every other parameter as a fact.
    ///
    /// - Returns: nil when `reply` is not an error reply.
    public init?(reply: Reply) {
        guard let name = reply.error else { return nil }
        let pairs = reply.parameters.objectValue ?? []
        self.init(
            name, reply.message ?? "(no message)",
            facts: pairs.filter { $0.0 != "message" })
    }

    /// The value of fact `key`, e.g. `account` or `fromVersion`.
    public subscript(fact key: String) -> JSONValue? {
        facts.first { $0.0 == key }?.1
    }

    static func invalidParameter(_ parameter: String, _ message: String) -> ProtocolError {
        ProtocolError(.invalidParameter, message, facts: [("parameter", .string(parameter))])
    }
}
