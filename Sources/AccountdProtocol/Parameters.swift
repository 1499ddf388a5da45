/// The parameters of a request, with typed accessors that fail with `InvalidParameter`.
public struct Parameters: Sendable {
    /// The pairs, in the order the client sent them.
    public var pairs: [(String, JSONValue)]

    public init(_ pairs: [(String, JSONValue)] = []) { self.pairs = pairs }

    public subscript(name: String) -> JSONValue? {
        pairs.first { $0.0 == name }?.1
    }

    /// A string parameter, or nil when absent or null.
    public func string(_ name: String) throws(ProtocolError) -> String? {
        switch self[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        case let other?: throw .invalidParameter(name, "parameter '\(name)' must be a string, not \(other.typeName)")
        }
    }

    /// A string parameter that must be present.
    public func requiredString(_ name: String) throws(ProtocolError) -> String {
        guard let value = try string(name) else {
            throw .invalidParameter(name, "parameter '\(name)' is required")
        }
        return value
    }

    /// A boolean parameter, or nil when absent or null.
    public func bool(_ name: String) throws(ProtocolError) -> Bool? {
        switch self[name] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        case let other?: throw .invalidParameter(name, "parameter '\(name)' must be a boolean, not \(other.typeName)")
        }
    }

    /// A whole number parameter within `range`, or nil when absent or null.
    public func int(_ name: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        switch self[name] {
        case nil, .null?: return nil
        case .int(let value)? where value >= range.lowerBound && value <= range.upperBound: return Int(value)
        case let other?:
            throw .invalidParameter(name, "parameter '\(name)' must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(other.typeName == "number" ? other.serialized() : other.typeName)")
        }
    }

    /// An array of strings, or nil when absent or null.
    public func stringArray(_ name: String) throws(ProtocolError) -> [String]? {
        switch self[name] {
        case nil, .null?: return nil
        case .array(let items)?:
            var out: [String] = []
            for item in items {
                guard case .string(let s) = item else {
                    throw .invalidParameter(name, "parameter '\(name)' must be an array of strings")
                }
                out.append(s)
            }
            return out
        case let other?: throw .invalidParameter(name, "parameter '\(name)' must be an array of strings, not \(other.typeName)")
        }
    }

    /// An account name parameter, validated.
    ///
    /// - Throws: `InvalidParameter` for a wrong type, `InvalidAccountName` for a bad name.
    public func account(_ name: String = "account") throws(ProtocolError) -> AccountName? {
        guard let raw = try string(name) else { return nil }
        return try AccountName(requested: raw)
    }

    public func requiredAccount(_ name: String = "account") throws(ProtocolError) -> AccountName {
        guard let account = try account(name) else { throw .invalidParameter(name, "parameter '\(name)' is required") }
        return account
    }
}
