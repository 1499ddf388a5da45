/// One request, decoded from a line in either of its two forms.
///
/// 1. **JSON**, shaped like varlink:
///    `{"method":"io.accountd.Switch","parameters":{"account":"alice"},"more":true}`.
/// 2. **Inline**, for humans and shell scripts: `switch alice`, `status`,
///    `export alice sql`, `set user theme "dark"`. The first word is the method,
///    case-insensitive; the rest are positional parameters. An inline request always
///    counts as `more: true`.
public struct Request: Sendable {
    public var method: Method
    public var parameters: Parameters
    /// Whether the client accepts streamed replies.
    public var more: Bool

    public init(method: Method, parameters: Parameters = Parameters(), more: Bool = false) {
        self.method = method
        self.parameters = parameters
        self.more = more
    }

    /// The request as a JSON line (without its `\n`), as `accountctl` sends it.
    public func encoded() -> String {
        var pairs: [(String, JSONValue)] = [("method", .string(method.qualifiedName))]
        if !parameters.pairs.isEmpty { pairs.append(("parameters", .object(parameters.pairs))) }
        if more { pairs.append(("more", .bool(true))) }
        return JSONValue.object(pairs).serialized()
    }

    /// Decodes one line (without its line ending).
    ///
    /// - Returns: nil for a blank line, which is not a request.
    /// - Throws: ``ProtocolError``: `InvalidRequest` (not UTF-8, not JSON, no method),
    ///   `MethodNotFound`, `InvalidParameter`, `InvalidValue` (an inline `set` whose value
    ///   is not JSON, or JSON beyond ``ValueLimits`` in either form), `InvalidAccountName`.
    public static func decode(_ line: [UInt8]) throws(ProtocolError) -> Request? {
        guard String.isValidUTF8(line) else {
            throw ProtocolError(.invalidRequest, "the request is not valid UTF-8")
        }
        var words = InlineWords(line)
        guard let first = words.next() else { return nil }
        if first.utf8.first == UInt8(ascii: "{") { return try decodeJSON(line) }
        let request = try decodeInline(first, then: &words)
        // The inline form names its parameters from the tables in decodeInline.
        assert((try? request.validateParameterNames()) != nil, "decodeInline named a parameter that \(request.method) does not take")
        return request
    }

    /// The method `line` names, whatever else is wrong with it; nil when it names none, or
    /// when it is JSON that cannot be read. For counting a refused request under its method.
    public static func method(namedIn line: [UInt8]) -> Method? {
        var words = InlineWords(line)
        guard let first = words.next() else { return nil }
        guard first.utf8.first == UInt8(ascii: "{") else { return Method(inlineWord: first) }
        guard let value = try? JSONParser.parse(line), let name = try? methodName(of: value) else { return nil }
        return Method(qualifiedName: name)
    }

    private static func decodeJSON(_ line: [UInt8]) throws(ProtocolError) -> Request {
        let value = try parseObject(line)
        let name = try methodName(of: value)
        guard let method = Method(qualifiedName: name) else { throw methodNotFound(name) }
        return try decodeBody(of: value, method: method)
    }

    /// Parses a JSON request: an object with only the fields varlink defines.
    ///
    /// - Throws: ``ProtocolError`` `InvalidRequest`.
    static func parseObject(_ bytes: [UInt8]) throws(ProtocolError) -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            // A value beyond its limits gets the same refusal as in the inline form.
            if error.path == ["parameters", "value"], let refusal = ValueLimits.refusal(error) { throw refusal }
            throw ProtocolError(.invalidRequest, "the request is not valid JSON: \(error)")
        }
        guard case .object(let pairs) = value else { throw ProtocolError(.invalidRequest, "a JSON request must be an object") }
        for (key, _) in pairs where !["method", "parameters", "more", "oneway", "upgrade"].contains(key) {
            throw ProtocolError(.invalidRequest, "unknown request field '\(key)'; a request has only method, parameters, more, oneway and upgrade")
        }
        return value
    }

    /// The qualified method name of a parsed JSON request.
    static func methodName(of value: JSONValue) throws(ProtocolError) -> String {
        guard case .string(let name)? = value["method"] else {
            throw ProtocolError(.invalidRequest, "the request has no \"method\" string")
        }
        return name
    }

    /// `MethodNotFound` for `name`.
    static func methodNotFound(_ name: String) -> ProtocolError {
        ProtocolError(.methodNotFound, "no method \(name); methods are \(Method.interface).Info, .Status, .Switch, ...", facts: [("method", .string(name))])
    }

    /// The parameters and the `more` flag of a parsed JSON request for `method`.
    static func decodeBody(of value: JSONValue, method: Method) throws(ProtocolError) -> Request {
        var parameters = Parameters()
        switch value["parameters"] {
        case nil, .null?: break
        case .object(let pairs)?: parameters = Parameters(pairs)
        case let other?: throw ProtocolError(.invalidRequest, "\"parameters\" must be an object, not \(other.typeName)")
        }
        var more = false
        switch value["more"] {
        case nil, .null?: break
        case .bool(let flag)?: more = flag
        case let other?: throw ProtocolError(.invalidRequest, "\"more\" must be a boolean, not \(other.typeName)")
        }
        let request = Request(method: method, parameters: parameters, more: more)
        try request.validateParameterNames()
        return request
    }

    /// Decodes an inline request whose first word is `word`; `words` gives the rest of the line.
    private static func decodeInline(_ word: String, then words: inout InlineWords) throws(ProtocolError) -> Request {
        guard let method = Method(inlineWord: word) else {
            throw ProtocolError(.methodNotFound, "no method '\(word.prefix(64))'; try info, status, list, switch ACCOUNT, export ACCOUNT [jsonl|sql|sqlite]", facts: [("method", .string(String(word.prefix(128))))])
        }
        /// The words left, as the parameters `names`, in order; fewer words leave the last ones out.
        func positional(_ names: [String]) throws(ProtocolError) -> [(String, JSONValue)] {
            let given = words.remaining()
            guard given.count <= names.count else {
                guard let last = names.last else {
                    // The method takes no words: the first extra word is what is wrong.
                    let extra = String(given[0].prefix(128))
                    throw ProtocolError.invalidParameter(
                        extra, "'\(method.rawValue.lowercased())' takes no words after the method; '\(extra.prefix(64))' is not one of its parameters")
                }
                throw ProtocolError.invalidParameter(
                    last, "'\(method.rawValue.lowercased())' takes at most \(names.count) word(s) after the method: \(names.joined(separator: " "))")
            }
            return zip(names, given).map { name, word in (name, .string(word)) }
        }
        let pairs: [(String, JSONValue)]
        switch method {
        case .set:
            // set NAMESPACE KEY VALUE: the value is the rest of the line, as JSON.
            guard let namespace = words.next(), let key = words.next(), let text = words.rest() else {
                throw .invalidParameter("value", "'set' takes NAMESPACE KEY VALUE, with VALUE as JSON, e.g. set user theme \"dark\"")
            }
            let value: JSONValue
            do {
                value = try JSONParser.parse(text, maximumDepth: ValueLimits.maximumDepth)
            } catch {
                throw ValueLimits.refusal(error)
                    ?? ProtocolError(.invalidValue, "the value is not valid JSON (\(error)); quote strings: set \(namespace) \(key) \"text\"")
            }
            pairs = [("namespace", .string(namespace)), ("key", .string(key)), ("value", value)]
        case .info, .ping, .watch, .metrics, .replication: pairs = try positional([])
        case .status, .verify, .plan, .snapshots: pairs = try positional(["account"])
        case .pull: pairs = try positional(["account", "replica"])
        case .importAccount: pairs = try positional(["account", "path"])
        case .switchAccount: pairs = try positional(["account"])
        case .export: pairs = try positional(["account", "format"])
        case .restore: pairs = try positional(["account", "snapshot"])
        case .snapshot: pairs = try positional(["account", "label"])
        case .remove:
            // remove ACCOUNT [purge|handoff]: the word spelt out, so that no typo erases an account.
            let given = words.remaining()
            guard given.count <= 2, given.count < 2 || ["purge", "handoff"].contains(given[1].lowercased()) else {
                throw .invalidParameter("purge", "'remove' takes ACCOUNT and then only the word 'purge' or 'handoff'")
            }
            var remove: [(String, JSONValue)] = []
            if let account = given.first { remove.append(("account", .string(account))) }
            if given.count == 2 { remove.append((given[1].lowercased(), .bool(true))) }
            pairs = remove
        case .get, .delete: pairs = try positional(["namespace", "key", "account"])
        case .keys: pairs = try positional(["namespace", "account"])
        case .list:
            let given = words.remaining()
            guard given.allSatisfy({ $0.lowercased() == "details" }) else {
                throw .invalidParameter("details", "'list' takes only the word 'details'")
            }
            pairs = given.isEmpty ? [] : [("details", .bool(true))]
        case .query, .execute:
            // query SQL / execute SQL: the SQL is the rest of the line, on the active account, without parameters.
            guard let rest = words.rest() else {
                throw .invalidParameter("sql", "'\(method.rawValue.lowercased())' takes SQL, the rest of the line, e.g. query SELECT count(*) FROM notes")
            }
            let text = String(decoding: rest, as: UTF8.self)
            pairs =
                method == .query
                ? [("sql", .string(text))] : [("statements", .array([.object([("sql", .string(text))])]))]
        case .migrate:
            let given = words.remaining()
            pairs = given == ["--all"] ? [("all", .bool(true))] : [("accounts", .array(given.map { .string($0) }))]
        }
        return Request(method: method, parameters: Parameters(pairs), more: true)
    }

    private func validateParameterNames() throws(ProtocolError) {
        guard !parameters.pairs.isEmpty else { return }  // the most frequent requests: no set to build
        let allowed = method.parameterNames
        for (name, _) in parameters.pairs where !allowed.contains(name) {
            let known = allowed.isEmpty ? "it takes none" : "it takes " + allowed.sorted().joined(separator: ", ")
            throw .invalidParameter(name, "\(method.rawValue) has no parameter '\(name.prefix(64))'; \(known)")
        }
    }
}

/// The words of an inline request, separated by blanks (spaces and tabs), read one at a
/// time, so that `set` can take the rest of the line as its value without splitting it.
///
/// It reads the line's bytes, which the caller has found to be valid UTF-8: the separators
/// are ASCII, so every word and the rest are valid UTF-8 too (even a word that begins with a
/// combining mark after a blank).
struct InlineWords {
    private let line: [UInt8]
    private var position: Int

    init(_ line: [UInt8]) {
        self.line = line
        position = line.startIndex
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    /// The next word, or nil at the end of the line.
    mutating func next() -> String? {
        while position < line.endIndex, Self.isBlank(line[position]) { position += 1 }
        guard position < line.endIndex else { return nil }
        let start = position
        while position < line.endIndex, !Self.isBlank(line[position]) { position += 1 }
        return String(decoding: line[start..<position], as: UTF8.self)
    }

    /// The words not read yet.
    mutating func remaining() -> [String] {
        var words: [String] = []
        while let word = next() { words.append(word) }
        return words
    }

    /// The rest of the line after the words read, without the blanks around it; nil when
    /// only blanks are left.
    mutating func rest() -> ArraySlice<UInt8>? {
        while position < line.endIndex, Self.isBlank(line[position]) { position += 1 }
        var end = line.endIndex
        while end > position, Self.isBlank(line[end - 1]) { end -= 1 }
        guard position < end else { return nil }
        defer { position = line.endIndex }
        return line[position..<end]
    }
}
