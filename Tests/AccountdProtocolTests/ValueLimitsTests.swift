import Testing
@testable import AccountdProtocol

/// One set of limits on a `Set` value, applied alike to the inline and the JSON form, and
/// leaving room for the replies that carry the value back (``ValueLimits``).
@Suite("ValueLimits: what Set accepts, any form, a client can read back")
struct ValueLimitsTests {
    /// `depth` nested arrays around `1`.
    static func nested(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
    }

    static func inline(_ value: String) -> String { "set user deep \(value)" }

    static func json(_ value: String) -> String {
        #"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"deep","value":\#(value)}}"#
    }

    @Test func theDepthLimitLeavesRoomForTheReplyEnvelope() {
        #expect(ValueLimits.maximumDepth == 126)
        #expect(ValueLimits.maximumDepth + ValueLimits.envelopeDepth == JSONParser.maximumDepth)
    }

    @Test("A value at the depth limit is accepted in both forms, and its Get and Watch replies parse",
          arguments: [inline(nested(ValueLimits.maximumDepth)), json(nested(ValueLimits.maximumDepth))])
    func atTheLimit(line: String) throws {
        let request = try #require(try Request.decode(bytes(line)))
        let command = try Command(request)
        guard case .set(_, let value) = command else {
            Issue.record("not a Set: \(command)")
            return
        }
        // The replies that carry the value back, as the daemon writes them and a client reads them.
        let replies = [
            Reply(parameters: PreferenceValue(value: value).parameters),
            Reply(
                parameters: WatchEvent.changed(.init(namespace: "user", key: "deep", scope: "account", account: "a", value: value, deleted: false))
                    .parameters,
                continues: true),
        ]
        for reply in replies {
            let back = try Reply.decode(Array(reply.encoded().utf8.dropLast()))
            #expect(back.parameters["value"] == value)
        }
    }

    @Test("A value one level deeper is InvalidValue, with the same message in both forms")
    func overTheLimit() {
        let deeper = Self.nested(ValueLimits.maximumDepth + 1)
        let inline = requestFailure(Self.inline(deeper))
        let json = requestFailure(Self.json(deeper))
        for error in [inline, json] {
            #expect(error?.name == .invalidValue)
            #expect(error?.fact("parameter") == "value")
            #expect(error?.fact("limit") == 126)
            #expect(error?.message.contains("126") == true, "\(error?.message ?? "")")
        }
        #expect(inline?.message == json?.message)
    }

    @Test("Nesting too deep outside a Set value is still InvalidRequest", arguments: [
        String(repeating: #"{"a":"#, count: 300), #"{"method":"io.accountd.Status","parameters":{"account":\#(nested(200))}}"#,
        #"{"method":"io.accountd.Set","parameters":[\#(nested(200))]}"#,
    ])
    func deepElsewhere(line: String) {
        #expect(requestFailure(line)?.name == .invalidRequest)
    }

    @Test("An integer beyond 64 bits is refused, not rounded, in both forms", arguments: [
        "18446744073709551615", "9223372036854775808", "-9223372036854775809", "1" + String(repeating: "0", count: 400),
        "[1,{\"n\":18446744073709551615}]",
    ])
    func integerBeyond64Bits(value: String) {
        let inline = requestFailure(Self.inline(value))
        let json = requestFailure(Self.json(value))
        for error in [inline, json] {
            #expect(error?.name == .invalidValue)
            #expect(error?.fact("parameter") == "value")
            #expect(error?.message.contains("9223372036854775807") == true, "\(error?.message ?? "")")
        }
        #expect(inline?.message == json?.message)
    }

    @Test("Integers at the ends of the range and reals of any size are kept", arguments: [
        ("9223372036854775807", JSONValue.int(.max)), ("-9223372036854775808", .int(.min)), ("1.5e300", .double(1.5e300)),
        ("-1.5e300", .double(-1.5e300)), ("1.8446744073709552e19", .double(18_446_744_073_709_551_616)), ("1e19", .double(1e19)),
    ])
    func keptExactly(value: String, expected: JSONValue) throws {
        for line in [Self.inline(value), Self.json(value)] {
            let request = try #require(try Request.decode(bytes(line)))
            #expect(identical(request.parameters["value"], expected), "\(line)")
        }
    }
}
