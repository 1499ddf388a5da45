/// A strict JSON parser over UTF-8 bytes. See ``JSONValue``.
public struct JSONParser {
    /// Why a text is not JSON, with the byte offset where parsing stopped.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// Which rule the text broke.
        public enum Kind: Hashable, Sendable {
            /// The text is not JSON (RFC 8259).
            case syntax
            /// Arrays and objects nest deeper than the parser's limit.
            case tooDeep
            /// An integer outside the 64-bit range, which a ``JSONValue`` cannot keep exactly.
            case integerOutOfRange
        }

        public var reason: String
        public var offset: Int
        public var kind: Kind = .syntax
        /// For a failure of kind other than `syntax`: the keys of the objects it is inside, at
        /// the two outermost levels ("[]" for an array), e.g. `["parameters", "value"]` for
        /// one inside a request's `value` parameter.
        public var path: [String] = []
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// How deeply arrays and objects may nest.
    public static let maximumDepth = 128

    /// Parses one JSON value that must fill the whole input (white space aside).
    ///
    /// An integer (a number without a fraction or an exponent) outside the 64-bit range is
    /// refused, as no ``JSONValue`` keeps it exactly; a real of any size (`1.5e300`) is read.
    ///
    /// - Parameter maximumDepth: how deeply arrays and objects may nest, at most
    ///   ``maximumDepth``: a caller that wraps the value in more levels passes fewer.
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = maximumDepth) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes: Array(bytes), depthLimit: min(maximumDepth, Self.maximumDepth))
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.fail("unexpected text after the JSON value") }
        return value
    }

    /// Parses a JSON text given as a string.
    public static func parse(_ text: String, maximumDepth: Int = maximumDepth) throws(Failure) -> JSONValue {
        try parse(Array(text.utf8), maximumDepth: maximumDepth)
    }

    private let bytes: [UInt8]
    private let depthLimit: Int
    private var index = 0
    /// The keys the parser is inside at the two outermost levels, for ``Failure/path``.
    private var outerKeys: [String] = []

    private init(bytes: [UInt8], depthLimit: Int) {
        self.bytes = bytes
        self.depthLimit = depthLimit
    }

    private func tooDeep() -> Failure {
        Failure(reason: "JSON nested more than \(depthLimit) levels deep", offset: index, kind: .tooDeep, path: outerKeys)
    }

    /// Notes that the parser entered `key` (an object's key, or "[]" for an array's items) at `depth`.
    private mutating func enter(_ key: String, depth: Int) {
        guard depth <= 2 else { return }
        if outerKeys.count >= depth { outerKeys.removeSubrange((depth - 1)...) }
        outerKeys.append(key)
    }

    private func fail(_ reason: String) -> Failure { Failure(reason: reason, offset: index) }

    private mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
    }

    private mutating func parseValue(depth: Int) throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of JSON") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character '\(Self.show(bytes[index]))'")
        }
    }

    private static func show(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
    }

    private mutating func expectLiteral(_ literal: String) throws(Failure) {
        let expected = Array(literal.utf8)
        guard index + expected.count <= bytes.count else { throw fail("unexpected end of JSON") }
        guard bytes[index..<(index + expected.count)].elementsEqual(expected) else { throw fail("invalid literal") }
        index += expected.count
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= depthLimit else { throw tooDeep() }
        index += 1
        var pairs: [(String, JSONValue)] = []
        var seen: Set<String> = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(pairs)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try parseString()
            guard seen.insert(key).inserted else { throw fail("duplicate key \"\(key)\"") }
            enter(key, depth: depth)
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            pairs.append((key, try parseValue(depth: depth)))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
            index += 1
            return .object(pairs)
        }
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= depthLimit else { throw tooDeep() }
        index += 1
        enter("[]", depth: depth)
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
            index += 1
            return .array(items)
        }
    }

    private mutating func parseNumber() throws(Failure) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger {
            guard let value = Int64(text) else {
                let shown = text.count > 40 ? text.prefix(40) + "…" : Substring(text)
                throw Failure(
                    reason: "the integer \(shown) is outside the 64-bit range (\(Int64.min) to \(Int64.max)), the integers kept exactly; "
                        + "send it as a string, or as a real (with a fraction or an exponent) if an approximation will do",
                    offset: start, kind: .integerOutOfRange, path: outerKeys)
            }
            return .int(value)
        }
        guard let value = Double(text), value.isFinite else { throw Failure(reason: "number out of range", offset: start) }
        return .double(value)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private mutating func parseString() throws(Failure) -> String {
        index += 1
        // The string's UTF-8 bytes, gathered in one buffer so that a long string with many
        // escapes (an SQL export chunk) costs linear time.
        var out: [UInt8] = []
        var runStart = index
        func flushRun(_ parser: JSONParser, _ end: Int, into out: inout [UInt8]) throws(Failure) {
            guard runStart < end else { return }
            let run = parser.bytes[runStart..<end]
            guard String.isValidUTF8(run) else {
                throw Failure(reason: "invalid UTF-8 in a string", offset: runStart)
            }
            out.append(contentsOf: run)
        }
        func append(_ scalar: Unicode.Scalar, to out: inout [UInt8]) {
            UTF8.encode(scalar) { out.append($0) }
        }
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let end = index
                index += 1
                // Without an escape (nearly every string), the string is its bytes as they are.
                if out.isEmpty {
                    let run = bytes[runStart..<end]
                    guard String.isValidUTF8(run) else { throw Failure(reason: "invalid UTF-8 in a string", offset: runStart) }
                    return String(decoding: run, as: UTF8.self)
                }
                try flushRun(self, end, into: &out)
                return String(decoding: out, as: UTF8.self)
            }
            if byte < 0x20 { throw fail("control character in a string (escape it)") }
            if byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            try flushRun(self, index, into: &out)
            index += 1
            guard index < bytes.count else { throw fail("unterminated escape") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "/"): out.append(UInt8(ascii: "/"))
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                let high = try parseHex4()
                if (0xD800...0xDBFF).contains(high) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate in \\u escape")
                    }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate in \\u escape") }
                    append(Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!, to: &out)
                } else if (0xDC00...0xDFFF).contains(high) {
                    throw fail("unpaired surrogate in \\u escape")
                } else {
                    append(Unicode.Scalar(high)!, to: &out)
                }
            default:
                throw fail("invalid escape '\\\(Self.show(escape))'")
            }
            runStart = index
        }
    }

    private mutating func parseHex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw fail("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
