/// One statement of a `Query` or an `Execute`, with its parameters bound, never spliced.
public struct SQLStatement: Sendable, Hashable {
    /// The longest statement text accepted, in UTF-8 bytes.
    public static let maximumBytes = 1 << 20

    public var sql: String
    public var parameters: SQLParameters

    public init(sql: String, parameters: SQLParameters = .positional([])) {
        self.sql = sql
        self.parameters = parameters
    }

    /// Reads `sql` and `parameters` from a request (`Query`) or a statement object (`Execute`).
    ///
    /// - Parameter path: how the parameters are named in messages, e.g. `statements[2].`.
    /// - Throws: `InvalidParameter` naming the parameter at fault.
    public init(sql: JSONValue?, parameters: JSONValue?, path: String = "") throws(ProtocolError) {
        guard case .string(let text)? = sql else {
            throw .invalidParameter(path + "sql", "parameter '\(path)sql' is required: the SQL text of one statement")
        }
        guard !text.allSatisfy({ $0.isWhitespace }), text.utf8.count <= Self.maximumBytes else {
            throw .invalidParameter(path + "sql", "parameter '\(path)sql' must be one statement of 1 to \(Self.maximumBytes) bytes")
        }
        self.sql = text
        self.parameters = try SQLParameters(json: parameters, parameter: path + "parameters")
    }

    /// The statement as a JSON object, parameters left out when there are none.
    public var json: JSONValue {
        var pairs: [(String, JSONValue)] = [("sql", .string(sql))]
        if let parameters = parameters.json { pairs.append(("parameters", parameters)) }
        return .object(pairs)
    }
}

/// The values bound to a statement: by position for `?` (and `?NNN`), or by name for
/// `:name`, `@name` and `$name` (the name given without its prefix, or with it).
public enum SQLParameters: Sendable, Hashable {
    case positional([SQLValue])
    case named([String: SQLValue])

    /// Reads an array, an object, or nothing (no parameters).
    public init(json: JSONValue?, parameter: String) throws(ProtocolError) {
        switch json {
        case nil, .null?: self = .positional([])
        case .array(let items)?:
            var values: [SQLValue] = []
            for (index, item) in items.enumerated() { values.append(try SQLValue(json: item, parameter: "\(parameter)[\(index)]")) }
            self = .positional(values)
        case .object(let pairs)?:
            var values: [String: SQLValue] = [:]
            for (name, item) in pairs { values[name] = try SQLValue(json: item, parameter: "\(parameter).\(name)") }
            self = .named(values)
        case let other?:
            throw .invalidParameter(parameter, "parameter '\(parameter)' must be an array (for ?) or an object (for :name), not \(other.typeName)")
        }
    }

    /// The JSON form; nil when there are no parameters.
    public var json: JSONValue? {
        switch self {
        case .positional(let values): values.isEmpty ? nil : .array(values.map(\.json))
        case .named(let values): values.isEmpty ? nil : .object(values.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) })
        }
    }
}
