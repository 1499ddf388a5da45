/// One SQL value as it travels on the wire, in both directions: `null`, a 64-bit
/// integer (exact), a real, text, or a blob as `{"base64": "..."}`.
///
/// Two more object forms carry what JSON cannot: an infinite real as
/// `{"real": "Infinity"}` or `{"real": "-Infinity"}`, and text whose bytes are not UTF-8
/// (SQLite stores whatever bytes it is given) as `{"textBase64": "..."}`. A JSON boolean is
/// taken as the integer 1 or 0, as SQLite stores it; SQLite turns NaN into NULL itself.
public enum SQLValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    /// Text whose bytes are not valid UTF-8, kept byte for byte.
    case textBytes([UInt8])
    case blob([UInt8])

    /// The key of a blob's object form.
    public static let blobKey = "base64"
    /// The key of the object form of text that is not UTF-8.
    public static let textBytesKey = "textBase64"
    /// The key of an infinite real's object form.
    public static let realKey = "real"

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
            guard pairs.count == 1, case .string(let text) = pairs[0].1, [Self.blobKey, Self.textBytesKey, Self.realKey].contains(pairs[0].0) else {
                throw ProtocolError(
                    .invalidParameter,
                    "parameter '\(parameter)': an object value must be a blob {\"base64\": \"...\"}, text {\"textBase64\": \"...\"} or {\"real\": \"Infinity\"} / {\"real\": \"-Infinity\"}",
                    facts: [("parameter", .string(parameter))])
            }
            if pairs[0].0 == Self.realKey {
                switch text {
                case "Infinity": self = .real(.infinity)
                case "-Infinity": self = .real(-.infinity)
                default:
                    throw ProtocolError(
                        .invalidParameter, "parameter '\(parameter)': {\"real\": ...} is \"Infinity\" or \"-Infinity\"; give other reals as JSON numbers",
                        facts: [("parameter", .string(parameter))])
                }
                return
            }
            guard let bytes = Base64.decode(Array(text.utf8)[...]) else {
                throw ProtocolError(
                    .invalidParameter, "parameter '\(parameter)': the \"\(pairs[0].0)\" text is not valid base64",
                    facts: [("parameter", .string(parameter))])
            }
            self = pairs[0].0 == Self.blobKey ? .blob(bytes) : .textBytes(bytes)
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
        case .real(let d): d.isInfinite ? .object([(Self.realKey, .string(d < 0 ? "-Infinity" : "Infinity"))]) : .double(d)
        case .text(let s): .string(s)
        case .textBytes(let bytes): .object([(Self.textBytesKey, .string(Base64.encode(bytes)))])
        case .blob(let bytes): .object([(Self.blobKey, .string(Base64.encode(bytes)))])
        }
    }

    /// Appends the value's JSON text to `out`, without building a ``JSONValue``.
    public func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .integer(let i): out += String(i)
        case .real(let d): out += d.isFinite ? String(d) : d.isInfinite ? "{\"real\":\"\(d < 0 ? "-" : "")Infinity\"}" : "null"
        case .text(let s): JSONValue.writeString(s, to: &out)
        case .textBytes(let bytes):
            out += "{\"textBase64\":\""
            out += Base64.encode(bytes)
            out += "\"}"
        case .blob(let bytes):
            out += "{\"base64\":\""
            out += Base64.encode(bytes)
            out += "\"}"
        }
    }
}
