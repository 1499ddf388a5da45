import Testing
@testable import AccountdProtocol

@Suite("Parameters: typed accessors")
struct ParametersTests {
    static let sample = Parameters([
        ("account", "alice"), ("create", true), ("accounts", ["a", "b"]), ("nothing", nil),
        ("number", 3), ("text", "x"), ("mixed", ["a", 1]), ("empty", []),
    ])

    @Test func presentValuesOfTheRightType() throws {
        let p = Self.sample
        #expect(try p.string("text") == "x")
        #expect(try p.requiredString("text") == "x")
        #expect(try p.bool("create") == true)
        #expect(try p.stringArray("accounts") == ["a", "b"])
        #expect(try p.stringArray("empty") == [])
        #expect(try p.account()?.rawValue == "alice")
        #expect(try p.requiredAccount().rawValue == "alice")
    }

    @Test func absentOrNullIsNil() throws {
        let p = Self.sample
        for name in ["missing", "nothing"] {
            #expect(try p.string(name) == nil)
            #expect(try p.bool(name) == nil)
            #expect(try p.stringArray(name) == nil)
            #expect(try p.account(name) == nil)
        }
    }

    @Test("Wrong types are InvalidParameter, naming the parameter", arguments: [
        ("string", "number"), ("string", "create"), ("string", "accounts"),
        ("bool", "text"), ("bool", "number"), ("bool", "accounts"),
        ("stringArray", "text"), ("stringArray", "mixed"), ("stringArray", "create"),
        ("account", "number"), ("account", "accounts"), ("account", "create"),
        ("requiredString", "number"), ("requiredAccount", "create"),
    ])
    func wrongType(accessor: String, name: String) {
        let p = Self.sample
        let error = #expect(throws: ProtocolError.self) {
            switch accessor {
            case "string": _ = try p.string(name)
            case "bool": _ = try p.bool(name)
            case "stringArray": _ = try p.stringArray(name)
            case "account": _ = try p.account(name)
            case "requiredString": _ = try p.requiredString(name)
            default: _ = try p.requiredAccount(name)
            }
        }
        #expect(error?.name == .invalidParameter)
        #expect(error?.fact("parameter") == .string(name))
    }

    @Test("Missing required parameters are InvalidParameter", arguments: ["missing", "nothing"])
    func missingRequired(name: String) {
        let p = Self.sample
        let stringError = #expect(throws: ProtocolError.self) { try p.requiredString(name) }
        #expect(stringError?.name == .invalidParameter)
        #expect(stringError?.fact("parameter") == .string(name))
        let accountError = #expect(throws: ProtocolError.self) { try p.requiredAccount(name) }
        #expect(accountError?.name == .invalidParameter)
        #expect(accountError?.fact("parameter") == .string(name))
    }

    @Test("An invalid account name is InvalidAccountName, with the name as a fact", arguments: [
        "", "..", ".hidden", "-x", "a/b", "../etc/passwd", "a b", "a\u{0}b", "é", String(repeating: "a", count: 129),
    ])
    func invalidAccountName(raw: String) {
        let p = Parameters([("account", .string(raw))])
        for error in [
            #expect(throws: ProtocolError.self) { try p.account() },
            #expect(throws: ProtocolError.self) { try p.requiredAccount() },
        ] {
            #expect(error?.name == .invalidAccountName)
            #expect(error?.fact("account") == .string(raw))
        }
    }

    @Test func accountUnderAnotherName() throws {
        let p = Parameters([("target", "bob"), ("account", "x/y")])
        #expect(try p.account("target")?.rawValue == "bob")
        #expect(throws: ProtocolError.self) { try p.account() }
    }

    @Test func firstOfRepeatedNamesWins() {
        // The parser refuses duplicates; a hand-built Parameters answers with the first.
        #expect(Parameters([("a", 1), ("a", 2)])["a"] == 1)
    }

    @Test func wrongTypeFromADecodedJSONRequest() throws {
        let request = try #require(try Request.decode(bytes(#"{"method":"io.accountd.List","parameters":{"details":"yes"},"more":true}"#)))
        let error = #expect(throws: ProtocolError.self) { try request.parameters.bool("details") }
        #expect(error?.name == .invalidParameter)
        #expect(error?.fact("parameter") == "details")
    }

    @Test func accountsArrayFromADecodedJSONRequest() throws {
        let good = try #require(try Request.decode(bytes(#"{"method":"io.accountd.Migrate","parameters":{"accounts":["a","b"]}}"#)))
        #expect(try good.parameters.stringArray("accounts") == ["a", "b"])
        let bad = try #require(try Request.decode(bytes(#"{"method":"io.accountd.Migrate","parameters":{"accounts":["a",2]}}"#)))
        let error = #expect(throws: ProtocolError.self) { try bad.parameters.stringArray("accounts") }
        #expect(error?.name == .invalidParameter)
        #expect(error?.fact("parameter") == "accounts")
    }

    @Test func invalidAccountFromADecodedJSONRequest() throws {
        let request = try #require(try Request.decode(bytes(#"{"method":"io.accountd.Switch","parameters":{"account":"../../etc"}}"#)))
        let error = #expect(throws: ProtocolError.self) { try request.parameters.requiredAccount() }
        #expect(error?.name == .invalidAccountName)
        #expect(error?.fact("account") == "../../etc")
    }
}
