import Testing
@testable import AccountdProtocol

@Suite("JSONValue: serialising and round-tripping")
struct JSONValueTests {
    @Test("Numbers serialise to exact text", arguments: [
        (JSONValue.int(0), "0"),
        (.int(-1), "-1"),
        (.int(Int64.max), "9223372036854775807"),
        (.int(Int64.min), "-9223372036854775808"),
        (.double(1.0), "1.0"),
        (.double(0.1), "0.1"),
        (.double(-2.5), "-2.5"),
        (.double(1e300), "1e+300"),
        (.double(-0.0), "-0.0"),
        (.double(9_223_372_036_854_775_808.0), "9.223372036854776e+18"),
        // JSON has no NaN or infinities.
        (.double(.nan), "null"),
        (.double(.infinity), "null"),
        (.double(-.infinity), "null"),
    ])
    func numberText(value: JSONValue, expected: String) {
        #expect(value.serialized() == expected)
    }

    static let roundTripValues: [JSONValue] = {
        let scalars: [JSONValue] = [
            .null, .bool(true), .bool(false),
            .int(0), .int(1), .int(-1), .int(Int64.max), .int(Int64.min), .int(Int64.max - 1), .int(Int64.min + 1),
        ]
        let doubles: [Double] = [
            1.0, -1.0, 0.1, 0.2 + 0.1, 1e300, -1e300, 1e-300, -0.0, 0.0, 1e-7, 123456789012345.0, 1e16,
            9_223_372_036_854_775_808.0, -9_223_372_036_854_775_809.0,
            Double.greatestFiniteMagnitude, Double.leastNonzeroMagnitude, Double.pi,
        ]
        let strings: [String] = [
            "", "plain", "é", "e\u{301}", "😀", "\u{10FFFF}", "\u{2028}\u{2029}", "\u{0}\u{1}\u{1F}\u{7F}",
            "quote\" back\\ slash/", "line\nfeed\r\ttab\u{08}\u{0C}",
        ]
        let inner: JSONValue = .object([("y", .array([.double(1.5), .double(-0.0)])), ("b", .null)])
        let containers: [JSONValue] = [
            .array([]), .object([]), .array([.int(1), .double(2.0), .string("3"), .null, .bool(true)]),
            .object([("z", .int(1)), ("a", inner), ("", .string("empty key")), ("\n", .string("\u{2028}"))]),
        ]
        return scalars + doubles.map(JSONValue.double) + strings.map(JSONValue.string) + containers
    }()

    @Test("Values round-trip through text exactly, keeping int and double apart", arguments: roundTripValues)
    func roundTrip(value: JSONValue) throws {
        let text = value.serialized()
        let back = try JSONParser.parse(text)
        #expect(identical(back, value), "\(text)")
        #expect(back.serialized() == text)
    }

    /// An integer a JSONValue cannot keep exactly is refused, never rounded to a Double; the
    /// same magnitude written as a real is read as one.
    @Test func integersBeyondInt64AreRefusedNotRounded() throws {
        #expect(try JSONParser.parse("[9223372036854775807,-9223372036854775808]") == [.int(Int64.max), .int(Int64.min)])
        for text in [
            "[1,9223372036854775808]", "9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
            "123456789012345678901234567890",
        ] {
            let failure = #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(text) }
            #expect(failure?.kind == .integerOutOfRange, "\(text)")
        }
        let real = try JSONParser.parse("[9223372036854775808.0,1.5e300]")
        #expect(real == [.double(9_223_372_036_854_775_808.0), .double(1.5e300)])
    }

    @Test func oneDotZeroStaysADouble() throws {
        let value = try JSONParser.parse("1.0")
        #expect(value == .double(1.0))
        #expect(value != .int(1))
        #expect(value.intValue == nil)
        #expect(value.serialized() == "1.0")
    }

    @Test("Strings serialise byte for byte", arguments: [
        ("", #""""#),
        ("plain", #""plain""#),
        ("a\"b\\c/d", #""a\"b\\c/d""#),
        ("\n\r\t\u{08}\u{0C}", #""\n\r\t\b\f""#),
        ("\u{0}\u{1}\u{1F}", #""\u0000\u0001\u001f""#),
        ("\u{7F}", #""\u007f""#),
        ("\u{1B}[31m", #""\u001b[31m""#),
        ("\u{2028}x\u{2029}", #""\u2028x\u2029""#),
        ("é😀中", "\"é😀中\""),
        ("\u{85}\u{A0}", "\"\u{85}\u{A0}\""),
    ])
    func stringText(string: String, expected: String) {
        #expect(JSONValue.string(string).serialized() == expected)
        #expect(Array(JSONValue.string(string).serialized().utf8) == Array(expected.utf8))
    }

    @Test func everyControlCharacterIsEscapedAndRoundTrips() throws {
        for code in Array(0..<0x20) + [0x7F] {
            let scalar = Unicode.Scalar(UInt32(code))!
            let text = JSONValue.string(String(Character(scalar))).serialized()
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "U+\(code) left raw")
            #expect(try JSONParser.parse(text) == .string(String(Character(scalar))))
        }
    }

    @Test func serialisedTextIsOneLine() {
        let value: JSONValue = ["message": "line one\nline two\r\n\u{2028}\u{2029}", "list": ["\n"]]
        let text = value.serialized()
        #expect(!text.contains("\n") && !text.contains("\r"))
        #expect(!text.unicodeScalars.contains("\u{2028}") && !text.unicodeScalars.contains("\u{2029}"))
    }

    @Test func keyOrderIsKeptWhenSerialising() {
        let value: JSONValue = ["b": 1, "a": 2, "c": ["z": nil, "y": false]]
        #expect(value.serialized() == #"{"b":1,"a":2,"c":{"z":null,"y":false}}"#)
        #expect(value.objectValue?.map(\.0) == ["b", "a", "c"])
    }

    @Test func writeAppends() {
        var out = "prefix:"
        JSONValue.array([1, "x"]).write(to: &out)
        #expect(out == #"prefix:[1,"x"]"#)
    }

    @Test func accessors() {
        let value: JSONValue = ["s": "x", "b": true, "i": 3, "a": [1], "o": ["k": 1], "n": nil, "d": 1.5]
        #expect(value["s"]?.stringValue == "x")
        #expect(value["b"]?.boolValue == true)
        #expect(value["i"]?.intValue == 3)
        #expect(value["a"]?.arrayValue == [1])
        #expect(value["o"]?.objectValue?.first?.0 == "k")
        #expect(value["n"]?.isNull == true)
        #expect(value["missing"] == nil)
        #expect(value["i"]?.stringValue == nil)
        #expect(JSONValue.array([1])["k"] == nil)
        #expect(value["d"]?.intValue == nil)
        #expect(["null", "boolean", "number", "number", "string", "array", "object"]
            == ([.null, .bool(true), .int(1), .double(1.5), .string("s"), .array([]), .object([])] as [JSONValue]).map(\.typeName))
    }

    @Test func equalityDistinguishesCases() {
        #expect(JSONValue.int(1) != .double(1.0))
        #expect(JSONValue.string("1") != .int(1))
        #expect(JSONValue.null != .bool(false))
        #expect(JSONValue.array([]) != .object([]))
        #expect(JSONValue.object([("a", 1)]) != .object([("a", 2)]))
        #expect(JSONValue.object([("a", 1)]) != .object([("b", 1)]))
        #expect(JSONValue.object([("a", 1)]) == .object([("a", 1)]))
    }

    @Test("Values that compare equal hash equally", arguments: [
        (JSONValue.int(5), JSONValue.int(5)),
        (.string("é"), .string("e\u{301}")),
        (.double(.nan), .double(.nan)),
        (.object([("a", .array([1, 2]))]), .object([("a", .array([1, 2]))])),
    ])
    func hashingAgreesWithEquality(a: JSONValue, b: JSONValue) {
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
    }

    @Test
    func negativeZeroHashesLikeZero() {
        let zero = JSONValue.double(0.0), negativeZero = JSONValue.double(-0.0)
        #expect(zero == negativeZero)
        #expect(zero.hashValue == negativeZero.hashValue)
        #expect(Set([zero, negativeZero]).count == 1)
    }
}
