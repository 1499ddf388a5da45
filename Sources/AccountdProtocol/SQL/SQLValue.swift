/// One SQL value as it travels on the wire, in both directions: `null`, a 64-bit
/// integer (exact), a real, text, or a blob as `{"base64": "..."}`.
///
/// A JSON boolean is taken as the integer 1 or 0, as SQLite stores it. A real that
/// JSON cannot carry (NaN, infinity) goes out as `null`; SQLite turns NaN into NULL itself.
public enum SQLValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// The key of a blob's object form.
    public static let blobKey = "base64"

    /// Reads a value from JSON.
    ///
    /// - Throws: `InvalidParameter` naming `parameter` for an array, an object other than
    ///   `{"base64": "..."}`, or base64 that does not decode.
    public init(json: JSONValue, parameter: String) throws(ProtocolError) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .integer(b ? 1 : 0)
        case .int(let i): self = .integer(i)
        case .double(let d): self = .real(d)
        case .string(let s): self = .text(s)
        case .object(let pairs):
            guard pairs.count == 1, pairs[0].0 == Self.blobKey, case .string(let text) = pairs[0].1 else {
                throw ProtocolError(
                    .invalidParameter, "parameter '\(parameter)': an object value must be a blob, {\"base64\": \"...\"}",
                    facts: [("parameter", .string(parameter))])
            }
            guard let bytes = Base64.decode(Array(text.utf8)[...]) else {
                throw ProtocolError(
                    .invalidParameter, "parameter '\(parameter)': the blob's \"base64\" text is not valid base64",
                    facts: [("parameter", .string(parameter))])
            }
            self = .blob(bytes)
        case .array:
            throw ProtocolError(
                .invalidParameter, "parameter '\(parameter)': a value is null, a number, a string or {\"base64\": \"...\"}, not an array",
                facts: [("parameter", .string(parameter))])
        }
    }

    /// The value as JSON.
    public var json: JSONValue {
        switch self {
        case .null: .null
        case .integer(let i): .int(i)
        case .real(let d): .double(d)
        case .text(let s): .string(s)
        case .blob(let bytes): .object([(Self.blobKey, .string(Base64.encode(bytes)))])
        }
    }

    /// Appends the value's JSON text to `out`, without building a ``JSONValue``.
    public func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .integer(let i): out += String(i)
        case .real(let d): out += d.isFinite ? String(d) : "null"
        case .text(let s): JSONValue.writeString(s, to: &out)
        case .blob(let bytes):
            out += "{\"base64\":\""
            out += Base64.encode(bytes)
            out += "\"}"
        }
    }
}
