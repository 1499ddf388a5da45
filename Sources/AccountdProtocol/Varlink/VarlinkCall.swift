/// One message read on the varlink socket, decoded: a call of `io.accountd` or of
/// `org.varlink.service`, and whether the client wants a reply.
///
/// A call of `io.accountd` decodes into the same ``Request`` as on the line socket, with
/// the same parameter checks, so both framings reach the dispatcher with one request
/// type. varlink's own rules come on top:
///
/// - only JSON objects: the inline form belongs to the line socket;
/// - `oneway: true` asks for no reply at all;
/// - `upgrade: true` is refused, as no method of accountd upgrades a connection;
/// - a method of another interface gets `org.varlink.service.InterfaceNotFound`.
///
/// ```swift
/// let call = try VarlinkCall.decode(Array(#"{"method":"io.accountd.Status"}"#.utf8))
/// ```
public struct VarlinkCall: Sendable {
    /// What a message calls.
    public enum Target: Sendable {
        /// A method of `io.accountd`.
        case accountd(Request)
        /// `org.varlink.service.GetInfo`: which service answers, and its interfaces.
        case getInfo
        /// `org.varlink.service.GetInterfaceDescription`: an interface's description.
        case getInterfaceDescription(interface: String)
    }

    /// The varlink interface every varlink service serves.
    public static let serviceInterface = "org.varlink.service"
    /// The interfaces accountd serves on its varlink socket.
    public static let interfaces = [serviceInterface, Method.interface]

    /// What the message calls.
    public var target: Target
    /// True when the client asked for no reply (`oneway: true`).
    public var oneway: Bool

    public init(target: Target, oneway: Bool = false) {
        self.target = target
        self.oneway = oneway
    }

    /// Whether `message` asks for no reply (`"oneway": true`), read from its envelope alone:
    /// the call itself is neither decoded nor checked. For a message refused before it is
    /// decoded (the daemon is stopping), which must still get no reply if it asked for none.
    /// False for a message that is not a JSON object.
    public static func isOneway(_ message: [UInt8]) -> Bool {
        guard let value = try? Request.parseObject(message) else { return false }
        return value["oneway"] == .bool(true)
    }

    /// Decodes one message, without its NUL.
    ///
    /// - Returns: nil for an empty message, which is not a call.
    /// - Throws: ``ProtocolError``: `InvalidRequest` (not UTF-8, not a JSON object, an
    ///   `upgrade`), `InterfaceNotFound`, `MethodNotFound`, `InvalidParameter`.
    public static func decode(_ message: [UInt8]) throws(ProtocolError) -> VarlinkCall? {
        guard let text = String(validatingUTF8Bytes: message) else {
            throw ProtocolError(.invalidRequest, "the message is not valid UTF-8")
        }
        let trimmed = text.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        if trimmed.isEmpty { return nil }
        guard trimmed.first == "{" else {
            throw ProtocolError(
                .invalidRequest,
                "a varlink message is a JSON object, e.g. {\"method\":\"io.accountd.Status\"}; inline requests such as 'status' are served on the line socket (accountd.sock)")
        }
        let value = try Request.parseObject(message)
        let name = try Request.methodName(of: value)
        var oneway = false
        switch value["oneway"] {
        case nil, .null?: break
        case .bool(let flag)?: oneway = flag
        case let other?: throw ProtocolError(.invalidRequest, "\"oneway\" must be a boolean, not \(other.typeName)")
        }
        if value["upgrade"] == .bool(true) {
            throw ProtocolError(.invalidRequest, "accountd has no method that upgrades the connection; call \(name) without \"upgrade\"")
        }
        let interface = name.lastIndex(of: ".").map { String(name[..<$0]) } ?? ""
        switch interface {
        case Method.interface:
            guard let method = Method(qualifiedName: name) else { throw Request.methodNotFound(name) }
            return VarlinkCall(target: .accountd(try Request.decodeBody(of: value, method: method)), oneway: oneway)
        case serviceInterface:
            return VarlinkCall(target: try serviceTarget(name, value["parameters"]), oneway: oneway)
        default:
            throw interfaceNotFound(interface)
        }
    }

    /// `org.varlink.service.InterfaceNotFound` for `interface`.
    public static func interfaceNotFound(_ interface: String) -> ProtocolError {
        ProtocolError(
            .interfaceNotFound, "no interface '\(interface.prefix(128))' here; accountd serves \(interfaces.joined(separator: " and "))",
            facts: [("interface", .string(String(interface.prefix(128))))])
    }

    /// The call of a method of `org.varlink.service`.
    private static func serviceTarget(_ name: String, _ parameters: JSONValue?) throws(ProtocolError) -> Target {
        switch name {
        case serviceInterface + ".GetInfo":
            return .getInfo
        case serviceInterface + ".GetInterfaceDescription":
            guard case .string(let interface)? = parameters?["interface"] else {
                throw ProtocolError.invalidParameter("interface", "GetInterfaceDescription takes \"interface\", a string such as \"io.accountd\"")
            }
            return .getInterfaceDescription(interface: interface)
        default:
            throw ProtocolError(
                .methodNotFound, "no method \(name.prefix(128)); \(serviceInterface) has GetInfo and GetInterfaceDescription",
                facts: [("method", .string(String(name.prefix(128))))])
        }
    }
}
