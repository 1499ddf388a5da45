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

    /// The error reply for this error.
    public var reply: Reply {
        Reply(error: name, parameters: .object([("message", .string(message))] + facts))
    }

    static func invalidParameter(_ parameter: String, _ message: String) -> ProtocolError {
        ProtocolError(.invalidParameter, message, facts: [("parameter", .string(parameter))])
    }
}
