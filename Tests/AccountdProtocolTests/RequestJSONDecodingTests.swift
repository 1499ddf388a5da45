import Testing
@testable import AccountdProtocol

@Suite("Request.decode: the JSON form")
struct RequestJSONDecodingTests {
    @Test func withoutParameters() throws {
        let request = try #require(decodedRequest(#"{"method":"io.accountd.Ping"}"#))
        #expect(request.method == .ping)
        #expect(request.parameters.pairs.isEmpty)
        #expect(request.more == false)
    }

    @Test func withParametersAndMore() throws {
        let request = try #require(decodedRequest(#"{"method":"io.accountd.Switch","parameters":{"account":"alice","create":true},"more":true}"#))
        #expect(request.method == .switchAccount)
        #expect(request.parameters.names == ["account", "create"])
        #expect(request.parameters["account"] == "alice")
        #expect(request.parameters["create"] == true)
        #expect(request.more == true)
    }

    @Test("more is read as given", arguments: [
        (#"{"method":"io.accountd.List","more":true}"#, true),
        (#"{"method":"io.accountd.List","more":false}"#, false),
        (#"{"method":"io.accountd.List","more":null}"#, false),
        (#"{"method":"io.accountd.List"}"#, false),
        (#"{"more":true,"method":"io.accountd.List"}"#, true),
    ])
    func more(line: String, expected: Bool) throws {
        let request = try #require(decodedRequest(line))
        #expect(request.method == .list)
        #expect(request.more == expected)
    }

    @Test("Empty or null parameters mean none", arguments: [
        #"{"method":"io.accountd.Status","parameters":{}}"#,
        #"{"method":"io.accountd.Status","parameters":null}"#,
        #"{"method":"io.accountd.Status"}"#,
    ])
    func emptyParameters(line: String) throws {
        let request = try #require(decodedRequest(line))
        #expect(request.method == .status)
        #expect(request.parameters.pairs.isEmpty)
    }

    @Test func parameterValuesKeepTheirJSONTypesAndOrder() throws {
        let request = try #require(decodedRequest(#"{"method":"io.accountd.Set","parameters":{"value":{"a":[1,2.5,null]},"key":"k","namespace":"user"}}"#))
        #expect(request.method == .set)
        #expect(request.parameters.names == ["value", "key", "namespace"])
        #expect(request.parameters["value"] == ["a": [1, 2.5, nil]])
    }

    @Test("White space around the JSON is fine", arguments: [
        #"  {"method":"io.accountd.Info"}"#,
        "\t{\"method\":\"io.accountd.Info\"}",
        #"{ "method" : "io.accountd.Info" }  "#,
    ])
    func whitespace(line: String) {
        #expect(decodedRequest(line)?.method == .info)
    }

    @Test("Every method decodes by its qualified name", arguments: Method.allCases)
    func everyMethod(method: Method) {
        #expect(decodedRequest(#"{"method":"\#(method.qualifiedName)"}"#)?.method == method)
    }

    @Test("Wrong types are refused with InvalidRequest", arguments: [
        #"{"method":"io.accountd.Status","parameters":[]}"#,
        #"{"method":"io.accountd.Status","parameters":"account=alice"}"#,
        #"{"method":"io.accountd.Status","parameters":1}"#,
        #"{"method":"io.accountd.Status","parameters":true}"#,
        #"{"method":"io.accountd.List","more":"true"}"#,
        #"{"method":"io.accountd.List","more":1}"#,
        #"{"method":"io.accountd.List","more":0}"#,
        #"{"method":"io.accountd.List","more":{}}"#,
        #"{"method":"io.accountd.List","more":[true]}"#,
        #"{"method":5}"#,
        #"{"method":null}"#,
        #"{"method":true}"#,
        #"{"method":["io.accountd.Ping"]}"#,
        #"{"method":{"name":"io.accountd.Ping"}}"#,
    ])
    func wrongTypes(line: String) {
        #expect(requestFailure(line)?.name == .invalidRequest)
    }

    @Test("A request without a method is refused", arguments: ["{}", #"{"parameters":{}}"#, #"{"more":true}"#])
    func missingMethod(line: String) {
        #expect(requestFailure(line)?.name == .invalidRequest)
    }

    @Test("Unknown top-level fields are refused", arguments: [
        #"{"method":"io.accountd.Ping","extra":1}"#,
        #"{"method":"io.accountd.Ping","params":{}}"#,
        #"{"Method":"io.accountd.Ping"}"#,
        #"{"method":"io.accountd.Ping","":null}"#,
    ])
    func unknownField(line: String) {
        #expect(requestFailure(line)?.name == .invalidRequest)
    }

    /// The refusal names the field and every field a request may have, oneway and upgrade included.
    @Test func anUnknownFieldsMessageListsEveryFieldARequestMayHave() throws {
        let failure = try #require(requestFailure(#"{"method":"io.accountd.Ping","extra":1}"#))
        #expect(failure.message.contains("'extra'"), "\(failure.message)")
        for field in ["method", "parameters", "more", "oneway", "upgrade"] {
            #expect(failure.message.contains(field), "\(field) is not named: \(failure.message)")
        }
        // Each of those fields is accepted.
        #expect(decodedRequest(#"{"method":"io.accountd.Ping","parameters":{},"more":false,"oneway":false,"upgrade":false}"#) != nil)
    }

    @Test("An unknown method is MethodNotFound, naming it", arguments: [
        "io.accountd.Nope",
        "io.accountd.status",
        "io.accountd.STATUS",
        "Status",
        "status",
        "io.accountd.",
        "io.accountd",
        "",
        "io.accountdx.Status",
        "io.accountd.Status.More",
        "org.varlink.service.GetInfo",
        "io.accountd.SwitchAccount",
    ])
    func unknownMethod(name: String) {
        let error = requestFailure(#"{"method":\#(JSONValue.string(name).serialized())}"#)
        #expect(error?.name == .methodNotFound)
        #expect(error?.name.rawValue == "org.varlink.service.MethodNotFound")
        #expect(error?.fact("method") == .string(name))
    }

    @Test("An unknown parameter is InvalidParameter, naming it", arguments: [
        ("io.accountd.Ping", "x"),
        ("io.accountd.Info", "account"),
        ("io.accountd.Status", "acount"),
        ("io.accountd.Status", "Account"),
        ("io.accountd.Switch", "force"),
        ("io.accountd.Migrate", "account"),
        ("io.accountd.List", "detail"),
        ("io.accountd.Get", "value"),
    ])
    func unknownParameter(method: String, parameter: String) {
        let error = requestFailure(#"{"method":"\#(method)","parameters":{\#(JSONValue.string(parameter).serialized()):"v"}}"#)
        #expect(error?.name == .invalidParameter)
        #expect(error?.name.rawValue == "org.varlink.service.InvalidParameter")
        #expect(error?.fact("parameter") == .string(parameter))
    }

    @Test("Every declared parameter name is accepted", arguments: Method.allCases)
    func declaredParameters(method: Method) throws {
        let parameters = JSONValue.object(method.parameterNames.sorted().map { ($0, .string("v")) })
        let line = JSONValue.object([("method", .string(method.qualifiedName)), ("parameters", parameters)]).serialized()
        let request = try #require(decodedRequest(line))
        #expect(Set(request.parameters.names) == method.parameterNames)
    }

    @Test("A line that starts with { but is not JSON is InvalidRequest", arguments: [
        "{",
        "{}}",
        #"{"method":"#,
        #"{"method":"io.accountd.Ping""#,
        #"{"method":"io.accountd.Ping"} trailing"#,
        #"{"method":"io.accountd.Ping"}{"method":"io.accountd.Ping"}"#,
        #"{method:"io.accountd.Ping"}"#,
        #"{'method':'io.accountd.Ping'}"#,
        #"{"method":"io.accountd.Ping","method":"io.accountd.Info"}"#,
        #"{"method":"io.accountd.Status","parameters":{"account":"a","account":"b"}}"#,
        #"{"method":"io.accountd.Ping","more":NaN}"#,
        "{\"method\":\"io.accountd.Ping\u{0}\"}",
    ])
    func badJSON(line: String) {
        #expect(requestFailure(line)?.name == .invalidRequest)
    }

    /// Nesting past the limit is refused as the inline form refuses it (``ValueLimits``).
    @Test func deeplyNestedParametersAreInvalidValue() {
        let line = #"{"method":"io.accountd.Set","parameters":{"value":"# + String(repeating: "[", count: 100_000)
        #expect(requestFailure(line)?.name == .invalidValue)
    }

    @Test("Invalid UTF-8 is InvalidRequest", arguments: [
        [0xFF] as [UInt8],
        [0x7B, 0xFF, 0x7D],
        bytes(#"{"method":"io.accountd.Status","parameters":{"account":""#) + [0xC3, 0x28] + bytes(#""}}"#),
        bytes("status ") + [0xC3],
        bytes("switch ") + [0xED, 0xA0, 0x80],
        [0xC0, 0xAF],
    ])
    func invalidUTF8(line: [UInt8]) {
        #expect(requestFailure(line)?.name == .invalidRequest)
    }

    @Test("A blank line is not a request", arguments: ["", " ", "\t", "  \t  "])
    func blank(line: String) throws {
        #expect(try Request.decode(bytes(line)) == nil)
    }

    @Test("encoded() decodes back to the same request", arguments: [
        Request(method: .ping),
        Request(method: .switchAccount, parameters: Parameters([("account", "alice"), ("create", true)]), more: true),
        Request(method: .set, parameters: Parameters([("namespace", "user"), ("key", "k"), ("value", ["a": [1, 2.5, nil]])])),
        Request(method: .list, more: true),
    ])
    func encodedRoundTrip(original: Request) throws {
        let line = original.encoded()
        #expect(!line.contains("\n"))
        let decoded = try #require(try Request.decode(bytes(line)))
        #expect(decoded.method == original.method)
        #expect(decoded.more == original.more)
        #expect(JSONValue.object(decoded.parameters.pairs) == .object(original.parameters.pairs))
    }

    @Test func encodedIsExact() {
        #expect(Request(method: .ping).encoded() == #"{"method":"io.accountd.Ping"}"#)
        #expect(Request(method: .switchAccount, parameters: Parameters([("account", "alice")]), more: true).encoded()
            == #"{"method":"io.accountd.Switch","parameters":{"account":"alice"},"more":true}"#)
    }
}
