/// A JSON value that round-trips exactly.
///
/// Integers stay integers (64-bit, no detour through `Double`; the parser refuses an
/// integer beyond 64 bits rather than round it), reals keep their
/// shortest round-trip form, and objects keep their key order. The parser is strict
/// (RFC 8259), rejects invalid UTF-8, and limits nesting depth, so hostile input
/// gets an error instead of exhausting the stack.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Key-value pairs in their original order. Duplicate keys are refused by the parser.
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a == b || (a.isNaN && b.isNaN)
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b)
        case .int(let i): hasher.combine(i)
        case .double(let d): hasher.combine(d == 0 ? 0 : d)  // 0.0 == -0.0, so they must hash alike
        case .string(let s): hasher.combine(s)
        case .array(let items): hasher.combine(items)
        case .object(let pairs):
            hasher.combine(pairs.count)
            for (key, value) in pairs {
                hasher.combine(key)
                hasher.combine(value)
            }
        }
    }

    /// The value of `key` in an object, or nil.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var intValue: Int64? { if case .int(let i) = self { i } else { nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var objectValue: [(String, JSONValue)]? { if case .object(let o) = self { o } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }

    /// The name of the value's JSON type, for messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

// MARK: - Building values

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements) }
    public init(nilLiteral: ()) { self = .null }
    public init(floatLiteral value: Double) { self = .double(value) }

    public init(_ value: Int) { self = .int(Int64(value)) }
    public init(_ value: String?) { self = value.map { .string($0) } ?? .null }
    public init(_ value: Double) { self = .double(value) }
}

// MARK: - Serialising

extension JSONValue {
    /// About the bytes the value's compact JSON takes (a number counted as 24, a string as its
    /// UTF-8 and quotes, escapes not counted), counted without writing it. The count stops
    /// once it passes `limit`, so that a large value is known to be large without walking it
    /// whole: then it is more than `limit`, and less than the whole.
    public func textSize(upTo limit: Int = .max) -> Int {
        var used = 0
        Self.count(self, into: &used, limit: limit)
        return used
    }

    /// Whether the value's JSON text is about `bytes` long or shorter (``textSize(upTo:)``).
    public func fits(within bytes: Int) -> Bool { textSize(upTo: bytes) <= bytes }

    /// Adds `value`'s size to `used`; false once `used` passed `limit`.
    @discardableResult
    private static func count(_ value: JSONValue, into used: inout Int, limit: Int) -> Bool {
        switch value {
        case .null, .bool: used += 5
        case .int, .double: used += 24
        case .string(let text): used += text.utf8.count + 2
        case .array(let items):
            used += 2
            for index in items.indices {
                if index > items.startIndex { used += 1 }
                guard used <= limit, count(items[index], into: &used, limit: limit) else { return false }
            }
        case .object(let pairs):
            used += 2
            for index in pairs.indices {
                used += pairs[index].0.utf8.count + (index > pairs.startIndex ? 4 : 3)
                guard used <= limit, count(pairs[index].1, into: &used, limit: limit) else { return false }
            }
        }
        return used <= limit
    }
}

extension JSONValue {
    /// Compact JSON text.
    public func serialized() -> String {
        // Gathered as bytes, then made a string once: cheaper than growing a `String`.
        var out: [UInt8] = []
        emit(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends compact JSON text to `out`.
    public func write(to out: inout String) { emit(to: &out) }

    /// Appends compact JSON text to `out` as UTF-8 bytes, the same text as the `String`
    /// form gives: a reply on its way to a socket is written this way, without the cost of
    /// growing a `String` piece by piece.
    public func write(to out: inout [UInt8]) { emit(to: &out) }

    /// Appends `s` as a JSON string literal.
    public static func writeString(_ s: String, to out: inout String) { emitString(s, to: &out) }

    /// Appends `s` as a JSON string literal, as UTF-8 bytes.
    public static func writeString(_ s: String, to out: inout [UInt8]) { emitString(s, to: &out) }

    /// The one serialiser behind both kinds of output.
    func emit(to out: inout some JSONTextOutput) {
        switch self {
        case .null: out.appendLiteral("null")
        case .bool(let b): out.appendLiteral(b ? "true" : "false")
        case .int(let i): out.appendJSON(String(i))
        case .double(let d):
            // Swift prints the shortest text that reads back as the same Double, and keeps
            // "1.0" a real. JSON has no NaN or infinity.
            if d.isFinite { out.appendJSON(String(d)) } else { out.appendLiteral("null") }
        case .string(let s): Self.emitString(s, to: &out)
        case .array(let items):
            out.appendLiteral("[")
            var first = true
            for item in items {
                if !first { out.appendLiteral(",") }
                first = false
                item.emit(to: &out)
            }
            out.appendLiteral("]")
        case .object(let pairs):
            Self.emitObject(pairs, to: &out)
        }
    }

    /// Appends `pairs` as a JSON object. (Walked by index: iterating the pairs as tuples
    /// looked the tuple's type up at run time for every object.)
    static func emitObject(_ pairs: [(String, JSONValue)], to out: inout some JSONTextOutput) {
        out.appendLiteral("{")
        for index in pairs.indices {
            if index > pairs.startIndex { out.appendLiteral(",") }
            emitString(pairs[index].0, to: &out)
            out.appendLiteral(":")
            pairs[index].1.emit(to: &out)
        }
        out.appendLiteral("}")
    }

    static func emitString(_ s: String, to out: inout some JSONTextOutput) {
        // Most strings need no escaping: copy them whole. (0xE2 starts U+2028 and U+2029,
        // which are escaped for JavaScript's sake, so it takes the careful path.)
        let plain =
            s.utf8.withContiguousStorageIfAvailable { bytes in
                !bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0x7F || $0 == 0xE2 }
            } ?? false
        if plain {
            out.appendLiteral("\"")
            out.appendJSON(s)
            out.appendLiteral("\"")
            return
        }
        out.appendLiteral("\"")
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out.appendJSON("\\\"")
            case "\\": out.appendJSON("\\\\")
            case "\n": out.appendJSON("\\n")
            case "\r": out.appendJSON("\\r")
            case "\t": out.appendJSON("\\t")
            case "\u{08}": out.appendJSON("\\b")
            case "\u{0C}": out.appendJSON("\\f")
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\u{2028}" || scalar == "\u{2029}" {
                    let hex = String(scalar.value, radix: 16)
                    out.appendJSON("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
                } else {
                    out.appendJSON(scalar)
                }
            }
        }
        out.appendLiteral("\"")
    }
}

/// Where ``JSONValue`` writes its text: a `String`, or UTF-8 bytes.
protocol JSONTextOutput {
    /// Appends `text`.
    mutating func appendJSON(_ text: String)
    /// Appends one scalar.
    mutating func appendJSON(_ scalar: Unicode.Scalar)
    /// Appends a piece of the syntax (a bracket, a comma, a keyword), known at compile time.
    mutating func appendLiteral(_ literal: StaticString)
}

extension String: JSONTextOutput {
    mutating func appendJSON(_ text: String) { self += text }
    mutating func appendJSON(_ scalar: Unicode.Scalar) { unicodeScalars.append(scalar) }
    mutating func appendLiteral(_ literal: StaticString) { self += literal.description }
}

extension Array: JSONTextOutput where Element == UInt8 {
    mutating func appendJSON(_ text: String) {
        // Copied whole from the string's contiguous UTF-8 (a small one's from the stack).
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }
    mutating func appendJSON(_ scalar: Unicode.Scalar) { append(contentsOf: String(scalar).utf8) }
    mutating func appendLiteral(_ literal: StaticString) {
        // The literals are ASCII and short: a single byte is appended as one.
        if literal.utf8CodeUnitCount == 1 {
            append(literal.utf8Start.pointee)
        } else {
            append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
        }
    }
}
