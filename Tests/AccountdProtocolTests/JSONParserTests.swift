import Testing
@testable import AccountdProtocol

@Suite("JSONParser: what is accepted, and as what")
struct JSONParserAcceptanceTests {
    @Test("Literals and numbers parse to the right case", arguments: [
        ("null", JSONValue.null),
        ("true", .bool(true)),
        ("false", .bool(false)),
        ("0", .int(0)),
        ("-0", .int(0)),
        ("42", .int(42)),
        ("-17", .int(-17)),
        ("9223372036854775807", .int(Int64.max)),
        ("-9223372036854775808", .int(Int64.min)),
        // Beyond Int64: refused, never rounded, trapped or wrapped (JSONValueTests).
        // A fraction or an exponent makes a real, even when the value is whole.
        ("1.0", .double(1.0)),
        ("0.1", .double(0.1)),
        ("1e300", .double(1e300)),
        ("1E3", .double(1000)),
        ("1e+2", .double(100)),
        ("2.5e-3", .double(0.0025)),
        ("-0.0", .double(-0.0)),
        ("0e0", .double(0)),
        ("1.7976931348623157e308", .double(Double.greatestFiniteMagnitude)),
        ("4.9e-324", .double(Double.leastNonzeroMagnitude)),
    ])
    func scalar(json: String, expected: JSONValue) {
        #expect(identical(parsed(json), expected))
    }

    @Test func negativeZeroKeepsItsSign() throws {
        let value = try JSONParser.parse("-0.0")
        guard case .double(let d) = value else {
            Issue.record("expected a double, got \(value)")
            return
        }
        #expect(d == 0 && d.sign == .minus)
    }

    @Test("Whitespace around values is allowed", arguments: [" 1", "1 ", "\t\n\r 1 \r\n\t", " [ 1 , 2 ] ", "{ \"a\" : 1 }"])
    func whitespace(json: String) {
        #expect(parsed(json) != nil)
    }

    @Test("Strings and escapes", arguments: [
        (#""""#, ""),
        (#""plain""#, "plain"),
        (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{08}\u{0C}\n\r\t"),
        (#""\u0000""#, "\u{0}"),
        (#""\u00e9""#, "é"),
        (#""\u00E9""#, "é"),
        (#""\u2028\u2029""#, "\u{2028}\u{2029}"),
        (#""\ud83d\ude00""#, "😀"),
        (#""\uD83D\uDE00""#, "😀"),
        (#""\udbff\udfff""#, "\u{10FFFF}"),
        (#""\ud800\udc00""#, "\u{10000}"),
        ("\"😀 é ü 中文\"", "😀 é ü 中文"),
        ("\"\u{2028}\"", "\u{2028}"),
        ("\"\u{7F}\"", "\u{7F}"),
        (#""a\u0041b\nc""#, "aAb\nc"),
    ])
    func string(json: String, expected: String) {
        let value = parsed(json)
        #expect(value == .string(expected))
        // Compare scalars too: String == ignores canonical-equivalence differences.
        #expect(value?.stringValue.map { Array($0.unicodeScalars) } == Array(expected.unicodeScalars))
    }

    @Test func astralPlaneByEscapeAndByRawUTF8AreTheSame() throws {
        let escaped = try JSONParser.parse(#""\ud83d\ude00""#)
        let raw = try JSONParser.parse([0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22])
        #expect(escaped == raw)
        #expect(escaped.stringValue?.unicodeScalars.map(\.value) == [0x1F600])
    }

    @Test func objectKeepsKeyOrder() throws {
        let value = try JSONParser.parse(#"{"z":1,"a":2,"m":{"y":true,"b":false},"c":null}"#)
        #expect(value.objectValue?.map(\.0) == ["z", "a", "m", "c"])
        #expect(value["m"]?.objectValue?.map(\.0) == ["y", "b"])
        #expect(value.serialized() == #"{"z":1,"a":2,"m":{"y":true,"b":false},"c":null}"#)
    }

    @Test func sameKeyInDifferentObjectsIsFine() {
        #expect(parsed(#"{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}"#) != nil)
    }

    @Test func keysDifferingOnlyInCaseAreDistinct() {
        #expect(parsed(#"{"a":1,"A":2}"#)?.objectValue?.count == 2)
    }

    @Test func nestedArraysAndObjects() throws {
        let value = try JSONParser.parse(#"[1,[2,[3,{"k":[4]}]],[],{}]"#)
        #expect(value == .array([1, .array([2, .array([3, .object([("k", [4])])])]), .array([]), .object([])]))
    }

    @Test func parsesFromAnyByteCollection() throws {
        let slice = bytes("xx[1,2]yy").dropFirst(2).dropLast(2)
        #expect(try JSONParser.parse(slice) == [1, 2])
    }
}

@Suite("JSONParser: what is refused")
struct JSONParserRefusalTests {
    @Test("Malformed text is refused", arguments: [
        "", " ", "\n",
        // No NaN or infinities in JSON.
        "NaN", "nan", "Infinity", "-Infinity", "+Infinity", "inf", "[NaN]", #"{"a":Infinity}"#,
        // Leading zeros, signs and incomplete numbers.
        "01", "-01", "00", "007", "[01]", "+1", "-", "1.", ".5", "-.5", "1e", "1e+", "1E-", "0x10", "1.e5",
        // Numbers too large for a double.
        "1e400", "-1e400",
        // Literals.
        "tru", "nul", "fals", "True", "NULL", "truex", "nulll",
        // Trailing garbage.
        "{} x", "1 2", "[1] ]", "\"a\" \"b\"", "null,", "[1]\u{0}",
        // Structure.
        "[", "]", "{", "}", "[1,]", "[,1]", "[1 2]", #"{"a":1,}"#, #"{"a" 1}"#, "{a:1}", #"{"a":}"#, #"{,}"#,
        "{1:2}", "'x'", "[1,,2]",
        // Strings.
        "\"abc", #""\x""#, #""\u12""#, #""\uZZZZ""#, #""\u12G4""#, "\"\\", #""\U0041""#, "\"a\tb\"", "\"a\nb\"",
        "\"\u{0}\"", "\"\u{1F}\"",
    ])
    func malformed(json: String) {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(json) }
    }

    @Test("Duplicate keys are refused", arguments: [
        #"{"a":1,"a":2}"#,
        #"{"a":1,"b":2,"a":1}"#,
        #"{"x":{"k":1,"k":1}}"#,
        #"[{"a":null,"a":null}]"#,
        #"{"a":1,"\u0061":2}"#,
    ])
    func duplicateKeys(json: String) {
        let failure = #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(json) }
        #expect(failure?.reason.contains("duplicate") == true)
    }

    @Test("Lone or broken surrogates are refused", arguments: [
        #""\ud83d""#,
        #""\ude00""#,
        #""\udfff""#,
        #""\ud83dx""#,
        #""\ud83d\u0041""#,
        #""\ud83d\ud83d""#,
        #""\ud83d\n""#,
        #""\ude00\ud83d""#,
        #""\ud83d\ude0""#,
    ])
    func loneSurrogates(json: String) {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(json) }
    }

    @Test("Invalid UTF-8 inside a string is refused", arguments: [
        [0x22, 0xFF, 0x22] as [UInt8],
        [0x22, 0x80, 0x22],                          // a lone continuation byte
        [0x22, 0xC3, 0x22],                          // a truncated two-byte sequence
        [0x22, 0x61, 0xE2, 0x82, 0x22],              // a truncated three-byte sequence
        [0x22, 0xC0, 0xAF, 0x22],                    // an overlong '/'
        [0x22, 0xE0, 0x80, 0xAF, 0x22],              // an overlong '/', three bytes
        [0x22, 0xED, 0xA0, 0x80, 0x22],              // a UTF-16 surrogate encoded as UTF-8
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],        // beyond U+10FFFF
        [0x22, 0xF8, 0x88, 0x80, 0x80, 0x80, 0x22],  // a five-byte form
        [0x22, 0x5C, 0x6E, 0xFF, 0x22],              // after an escape: "\n" then 0xFF
        [0x22, 0xFF, 0x5C, 0x6E, 0x22],              // before an escape
        [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D],  // in an object key
        [0x5B, 0x22, 0x6F, 0x6B, 0x22, 0x2C, 0x22, 0xC3, 0x28, 0x22, 0x5D],  // second array item
    ])
    func invalidUTF8(json: [UInt8]) {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(json) }
    }

    @Test("Invalid UTF-8 outside strings is refused", arguments: [[0xFF] as [UInt8], [0x31, 0xFF], [0x5B, 0xC3, 0xA9, 0x5D]])
    func invalidBytesOutsideStrings(json: [UInt8]) {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(json) }
    }

    @Test func failureReportsTheByteOffset() {
        let failure = #expect(throws: JSONParser.Failure.self) { try JSONParser.parse("[1,2,x]") }
        #expect(failure?.offset == 5)
        #expect(failure?.description.hasSuffix("at byte 5") == true)
    }
}

@Suite("JSONParser: nesting depth")
struct JSONParserDepthTests {
    static func arrays(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    static func objects(_ depth: Int) -> String {
        String(repeating: #"{"k":"#, count: depth) + "0" + String(repeating: "}", count: depth)
    }

    static func mixed(_ depth: Int) -> String {
        var open = "", close = ""
        for level in 0..<depth {
            if level % 2 == 0 { open += "["; close = "]" + close } else { open += #"{"k":"#; close = "}" + close }
        }
        return open + "1" + close
    }

    @Test func limitIs128() {
        #expect(JSONParser.maximumDepth == 128)
    }

    @Test("128 levels are accepted", arguments: [arrays(128), objects(128), mixed(128)])
    func atLimit(json: String) throws {
        var value = try JSONParser.parse(json)
        var depth = 0
        while true {
            if let items = value.arrayValue, let first = items.first { value = first } else if let pairs = value.objectValue, let first = pairs.first { value = first.1 } else { break }
            depth += 1
        }
        #expect(depth >= 127)
    }

    @Test("129 levels are refused", arguments: [arrays(129), objects(129), mixed(129)])
    func overLimit(json: String) {
        let failure = #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(json) }
        #expect(failure?.reason.contains("128") == true)
    }

    @Test func refusalOffsetIsTheOpeningBracketOfLevel129() {
        let failure = #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Self.arrays(129)) }
        #expect(failure?.offset == 128)
    }

    @Test("100,000 levels fail quickly and without crashing", arguments: [
        String(repeating: "[", count: 100_000),
        arrays(100_000),
        String(repeating: #"{"a":"#, count: 100_000),
        objects(100_000),
        String(repeating: "[{\"a\":", count: 50_000),
    ])
    func hostileDepth(json: String) {
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(json) }
        }
        #expect(elapsed < .seconds(1))
    }

    @Test func wideButShallowIsFine() throws {
        let json = "[" + Array(repeating: "[]", count: 100_000).joined(separator: ",") + "]"
        #expect(try JSONParser.parse(json).arrayValue?.count == 100_000)
    }

    /// A long string with an escape every few bytes (an `sql` export chunk) decodes whole.
    /// Its speed is a benchmark's business (docs/PERFORMANCE.md, "Export through the client library").
    @Test func aLongStringWithManyEscapesDecodesWhole() throws {
        let piece = #"INSERT INTO t VALUES(1,'x\u00e9');\n"#
        let count = 80_000
        let json = "\"" + String(repeating: piece, count: count) + "\""
        let value = try JSONParser.parse(json)
        #expect(value.stringValue == String(repeating: "INSERT INTO t VALUES(1,'xé');\n", count: count))
    }
}
