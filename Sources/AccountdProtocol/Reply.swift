/// One reply line: success parameters, or an error, possibly one of a stream.
public struct Reply: Sendable {
    /// The error name, for an error reply.
    public var error: ErrorName?
    /// The reply's parameters: an object.
    public var parameters: JSONValue
    /// True on every streamed reply but the last.
    public var continues: Bool

    /// A success reply.
    public init(parameters: JSONValue = .object([]), continues: Bool = false) {
        self.error = nil
        self.parameters = parameters
        self.continues = continues
    }

    /// An error reply; `parameters` carries at least `message`.
    public init(error: ErrorName, parameters: JSONValue) {
        self.error = error
        self.parameters = parameters
        self.continues = false
    }

    /// The reply as one line of JSON, ending in `\n`.
    public func encoded() -> String {
        var out = ""
        encode(into: &out)
        return out
    }

    /// The reply as one message of `framing`: its JSON, ended by `\n`, or by NUL for varlink.
    public func encoded(for framing: Framing) -> String {
        var out = encoded()
        if framing == .varlink {
            out.removeLast()
            out.append("\0")
        }
        return out
    }

    /// Appends the reply's line to `out`.
    public func encode(into out: inout String) { emit(to: &out) }

    /// Appends the reply's line to `out` as UTF-8 bytes (the same text as the `String` form):
    /// how a connection gathers its replies.
    public func encode(into out: inout [UInt8]) { emit(to: &out) }

    private func emit(to out: inout some JSONTextOutput) {
        if error == nil, !continues, case .object(let pairs) = parameters, pairs.isEmpty {
            // The commonest reply (a Set's, a Delete's, a Ping's), whole.
            out.appendLiteral("{\"parameters\":{}}\n")
            return
        }
        out.appendLiteral("{")
        if let error {
            out.appendLiteral("\"error\":")
            JSONValue.emitString(error.rawValue, to: &out)
            out.appendLiteral(",")
        }
        out.appendLiteral("\"parameters\":")
        parameters.emit(to: &out)
        if continues { out.appendLiteral(",\"continues\":true") }
        out.appendLiteral("}\n")
    }

    /// The human message of an error reply.
    public var message: String? { parameters["message"]?.stringValue }

    /// Decodes a reply line, as a client reads it.
    ///
    /// - Throws: ``ProtocolError`` (`InvalidRequest`) when the line is not a reply.
    public static func decode(_ line: some Collection<UInt8>) throws(ProtocolError) -> Reply {
        let value: JSONValue
        do {
            value = try JSONParser.parse(line)
        } catch {
            throw ProtocolError(.invalidRequest, "the daemon's reply is not valid JSON: \(error)")
        }
        guard case .object = value else { throw ProtocolError(.invalidRequest, "the daemon's reply is not a JSON object") }
        var reply = Reply(parameters: value["parameters"] ?? .object([]), continues: value["continues"]?.boolValue ?? false)
        if let name = value["error"]?.stringValue { reply.error = ErrorName(rawValue: name) }
        return reply
    }
}
