/// An error that declares its own wire form: the name programs switch on, a message for
/// humans, and the facts that travel with them (as an HTTP error type declares its status).
///
/// Each error type that can reach a client says how it goes on the wire by conforming;
/// the daemon writes any error through one funnel, which asks it for ``reply``. An error
/// that does not conform is not meant for the wire: the funnel sends it as `InternalError`
/// and logs its details.
public protocol WireError: Error {
    /// The error's name on the wire.
    var wireName: ErrorName { get }
    /// What happened and what to do, for humans: the reply's `message`.
    var wireMessage: String { get }
    /// The reply's other parameters, in order, such as `account`, `parameter`, `limit`.
    var wireFacts: [(String, JSONValue)] { get }
}

extension WireError {
    /// The error reply: `message` first, then the facts.
    public var reply: Reply {
        Reply(error: wireName, parameters: .object([("message", .string(wireMessage))] + wireFacts))
    }
}

extension ProtocolError: WireError {
    public var wireName: ErrorName { name }
    public var wireMessage: String { message }
    public var wireFacts: [(String, JSONValue)] { facts }
}

extension InvalidAccountName: WireError {
    /// `InvalidAccountName`.
    public var wireName: ErrorName { .invalidAccountName }
    /// Which rule the name breaks.
    public var wireMessage: String { description }
    /// The refused name, as `account`.
    public var wireFacts: [(String, JSONValue)] { [("account", .string(name))] }
}
