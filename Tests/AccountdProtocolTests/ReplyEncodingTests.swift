import Testing
@testable import AccountdProtocol

@Suite("Reply: lines on the wire")
struct ReplyEncodingTests {
    @Test("Replies encode byte for byte", arguments: [
        (Reply(), #"{"parameters":{}}"# + "\n"),
        (Reply(parameters: ["account": "alice", "count": 2]), #"{"parameters":{"account":"alice","count":2}}"# + "\n"),
        (Reply(parameters: ["active": nil, "state": "idle"], continues: false), #"{"parameters":{"active":null,"state":"idle"}}"# + "\n"),
        (Reply(parameters: ["step": 1, "of": 3, "name": "v2"], continues: true),
         #"{"parameters":{"step":1,"of":3,"name":"v2"},"continues":true}"# + "\n"),
        (Reply(parameters: .object([]), continues: true), #"{"parameters":{},"continues":true}"# + "\n"),
        (Reply(error: .accountTooNew, parameters: ["message": "too new", "fromVersion": 7]),
         #"{"error":"io.accountd.AccountTooNew","parameters":{"message":"too new","fromVersion":7}}"# + "\n"),
        (Reply(error: .expectedMore, parameters: ["message": "use more"]),
         #"{"error":"org.varlink.service.ExpectedMore","parameters":{"message":"use more"}}"# + "\n"),
        (Reply(parameters: ["d": 1.0, "i": 1, "s": "é\n\u{2028}"]), #"{"parameters":{"d":1.0,"i":1,"s":"é\n\u2028"}}"# + "\n"),
    ])
    func encoded(reply: Reply, expected: String) {
        #expect(Array(reply.encoded().utf8) == Array(expected.utf8))
        // The bytes a connection gathers are the same text.
        var bytes: [UInt8] = [0x78]
        reply.encode(into: &bytes)
        #expect(bytes == [0x78] + Array(expected.utf8))
    }

    @Test func theBytesAndTheStringFormsAreTheSameText() {
        let values: [JSONValue] = [
            .null, true, .int(Int64.min), .double(0.1), .double(-2.5e-300), .double(.nan), "",
            .string("q\" b\\ n\n r\r t\t \u{08}\u{0C}\u{0}\u{7F}\u{2028}\u{2029} é ✓ 😀 \u{E2}x"),
            [1, "a", nil, [.object([])]], .object([("k\"ey", "v"), ("n", ["deep": [3.25, false]])]),
        ]
        for value in values {
            var text = ""
            value.write(to: &text)
            var bytes: [UInt8] = []
            value.write(to: &bytes)
            #expect(bytes == Array(text.utf8), "\(text)")
            #expect(value.serialized() == text)
            var quoted: [UInt8] = []
            JSONValue.writeString(text, to: &quoted)
            var quotedText = ""
            JSONValue.writeString(text, to: &quotedText)
            #expect(quoted == Array(quotedText.utf8))
        }
    }

    @Test func anErrorReplyNeverContinues() {
        let reply = Reply(error: .accountBusy, parameters: ["message": "busy"])
        #expect(reply.continues == false)
        #expect(!reply.encoded().contains("continues"))
    }

    @Test func protocolErrorReplyPutsTheMessageFirstThenTheFacts() {
        let error = ProtocolError(.methodNotFound, "no method x", facts: [("method", "x")])
        #expect(error.reply.encoded() == #"{"error":"org.varlink.service.MethodNotFound","parameters":{"message":"no method x","method":"x"}}"# + "\n")
        let parameter = ProtocolError.invalidParameter("account", "bad")
        #expect(parameter.reply.encoded() == #"{"error":"org.varlink.service.InvalidParameter","parameters":{"message":"bad","parameter":"account"}}"# + "\n")
        #expect(parameter.description == "InvalidParameter: bad")
    }

    @Test func aHostileMessageStaysOnOneLine() {
        let reply = Reply(error: .invalidRequest, parameters: ["message": "a\nb\r\nc\u{2028}d\u{0}e\"f\\"])
        let line = reply.encoded()
        #expect(line.utf8.filter { $0 == 0x0A }.count == 1)
        #expect(line.utf8.last == 0x0A)
        #expect(!line.utf8.contains(0x0D) && !line.utf8.contains(0x00))
        #expect(line == #"{"error":"io.accountd.InvalidRequest","parameters":{"message":"a\nb\r\nc\u2028d\u0000e\"f\\"}}"# + "\n")
    }

    @Test func encodeIntoAppends() {
        var out = "x"
        Reply(parameters: ["a": 1]).encode(into: &out)
        Reply(parameters: ["b": 2], continues: true).encode(into: &out)
        #expect(out == "x" + #"{"parameters":{"a":1}}"# + "\n" + #"{"parameters":{"b":2},"continues":true}"# + "\n")
    }

    @Test("Replies decode back to what was encoded", arguments: [
        Reply(),
        Reply(parameters: ["account": "alice", "sizeBytes": 4096, "ratio": 0.5]),
        Reply(parameters: ["row": ["id": 1, "name": "é😀\u{2028}"]], continues: true),
        Reply(error: .accountNotFound, parameters: ["message": "no account bob", "account": "bob"]),
        Reply(error: .internalError, parameters: ["message": "see the log"]),
    ])
    func roundTrip(original: Reply) throws {
        let line = original.encoded()
        for input in [bytes(line), bytes(String(line.dropLast()))] {
            let decoded = try Reply.decode(input)
            #expect(decoded.error == original.error)
            #expect(identical(decoded.parameters, original.parameters))
            #expect(decoded.continues == original.continues)
            #expect(decoded.encoded() == line)
        }
    }

    @Test func messageOfAnErrorReply() throws {
        let reply = try Reply.decode(bytes(#"{"error":"io.accountd.AccountBusy","parameters":{"message":"busy, try later"}}"#))
        #expect(reply.error == .accountBusy)
        #expect(reply.message == "busy, try later")
        #expect(try Reply.decode(bytes(#"{"parameters":{"a":1}}"#)).message == nil)
    }

    @Test func decodeDefaults() throws {
        let reply = try Reply.decode(bytes("{}"))
        #expect(reply.error == nil)
        #expect(reply.parameters == .object([]))
        #expect(reply.continues == false)
    }

    @Test("Lines that are not a reply object are refused", arguments: ["", "[]", "1", "\"x\"", "{", #"{"parameters":{}} x"#, "status"])
    func decodeRefuses(line: String) {
        let error = #expect(throws: ProtocolError.self) { try Reply.decode(bytes(line)) }
        #expect(error?.name == .invalidRequest)
    }

    @Test func errorNameShortName() {
        #expect(ErrorName.accountTooNew.shortName == "AccountTooNew")
        #expect(ErrorName.methodNotFound.shortName == "MethodNotFound")
        #expect(ErrorName(rawValue: "Plain").shortName == "Plain")
    }
}
