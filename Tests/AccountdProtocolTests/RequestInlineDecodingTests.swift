import Testing
@testable import AccountdProtocol

@Suite("Request.decode: the inline form")
struct RequestInlineDecodingTests {
    /// Decodes `line` and returns its method and parameters, recording an issue when refused.
    static func decoded(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) -> (Method, JSONValue)? {
        guard let request = decodedRequest(line, sourceLocation: sourceLocation) else { return nil }
        #expect(request.more, "an inline request always counts as more: true", sourceLocation: sourceLocation)
        return (request.method, .object(request.parameters.pairs))
    }

    static let positionalCases: [(String, Method, JSONValue)] = [
        ("status", .status, .object([])),
        ("status alice", .status, ["account": "alice"]),
        ("switch alice", .switchAccount, ["account": "alice"]),
        ("switch alice@example.org", .switchAccount, ["account": "alice@example.org"]),
        ("export alice", .export, ["account": "alice"]),
        ("export alice sql", .export, ["account": "alice", "format": "sql"]),
        ("export alice jsonl", .export, ["account": "alice", "format": "jsonl"]),
        ("info", .info, .object([])),
        ("ping", .ping, .object([])),
        ("watch", .watch, .object([])),
        ("list", .list, .object([])),
        ("list details", .list, ["details": true]),
        ("list DETAILS", .list, ["details": true]),
        ("verify bob", .verify, ["account": "bob"]),
        ("snapshots bob", .snapshots, ["account": "bob"]),
        ("restore bob 2024-01-01", .restore, ["account": "bob", "snapshot": "2024-01-01"]),
        ("get user theme", .get, ["namespace": "user", "key": "theme"]),
        ("get user theme alice", .get, ["namespace": "user", "key": "theme", "account": "alice"]),
        ("keys user", .keys, ["namespace": "user"]),
        ("keys user alice", .keys, ["namespace": "user", "account": "alice"]),
        ("delete user theme", .delete, ["namespace": "user", "key": "theme"]),
        ("del user theme", .delete, ["namespace": "user", "key": "theme"]),
        ("DEL user theme alice", .delete, ["namespace": "user", "key": "theme", "account": "alice"]),
        ("migrate --all", .migrate, ["all": true]),
        ("migrate a b", .migrate, ["accounts": ["a", "b"]]),
        ("migrate alice", .migrate, ["accounts": ["alice"]]),
    ]

    /// Words are cut at the blank bytes, even where a blank and the combining mark after it
    /// make one character: the key and the value keep their combining marks, the blank goes.
    @Test func wordsAreCutAtBlankBytesEvenBeforeACombiningMark() throws {
        let (getMethod, get) = try #require(Self.decoded("get user \u{301}theme"))
        #expect(getMethod == .get && get == ["namespace": "user", "key": "\u{301}theme"])
        let (setMethod, set) = try #require(Self.decoded("set user theme \t\"\u{301}\""))
        #expect(setMethod == .set && set == ["namespace": "user", "key": "theme", "value": "\u{301}"])
    }

    @Test("Positional words map to named parameters", arguments: positionalCases)
    func positional(line: String, method: Method, parameters: JSONValue) {
        let result = Self.decoded(line)
        #expect(result?.0 == method)
        #expect(result?.1 == parameters)
    }

    @Test("Method words are case-insensitive", arguments: [
        ("STATUS", Method.status), ("Status", .status), ("sTaTuS", .status),
        ("SWITCH alice", .switchAccount), ("Switch alice", .switchAccount),
        ("INFO", .info), ("Ping", .ping), ("LIST", .list), ("Export a sql", .export),
        ("Del n k", .delete), ("dEl n k", .delete), ("DELETE n k", .delete),
        ("MiGrAtE --all", .migrate), ("SET n k 1", .set), ("KEYS n", .keys), ("GET n k", .get),
    ])
    func caseInsensitiveMethod(line: String, method: Method) {
        #expect(Self.decoded(line)?.0 == method)
    }

    /// A word after a method that takes none is named as the parameter that is wrong (it was
    /// an empty name and a message ending in a colon: hostile32 F6).
    @Test("A word after a method that takes none is named", arguments: ["ping extra", "info x y", "metrics x", "watch x"])
    func wordAfterAMethodThatTakesNone(line: String) {
        let error = #expect(throws: ProtocolError.self) { try Request.decode(Array(line.utf8)) }
        let extra = String(line.split(separator: " ")[1])
        #expect(error?.name == .invalidParameter)
        #expect(error?[fact: "parameter"] == .string(extra), "\(String(describing: error))")
        #expect(error?.message.contains("takes no words after the method") == true, "\(String(describing: error))")
    }

    @Test func parameterWordsKeepTheirCase() {
        #expect(Self.decoded("SWITCH Alice")?.1 == ["account": "Alice"])
    }

    @Test("Every method has an inline word", arguments: Method.allCases)
    func everyMethodWord(method: Method) {
        #expect(Method(inlineWord: method.rawValue.lowercased()) == method)
        #expect(Method(inlineWord: method.rawValue.uppercased()) == method)
    }

    @Test("Extra spaces and tabs between words are ignored", arguments: [
        "switch alice", "  switch alice", "switch  alice", "switch alice  ", "\tswitch\talice\t", " \t switch \t alice \t ",
    ])
    func spacing(line: String) {
        let result = Self.decoded(line)
        #expect(result?.0 == .switchAccount)
        #expect(result?.1 == ["account": "alice"])
    }

    static let setCases: [(String, JSONValue)] = [
        (#"set user theme "dark""#, .string("dark")),
        (#"set user prefs {"a": [1, 2]}"#, ["a": [1, 2]]),
        (#"set user name "Ada  Lovelace""#, "Ada  Lovelace"),
        (#"set user list [1, "two", null, true, 2.5]"#, [1, "two", nil, true, 2.5]),
        ("set user n 42", 42),
        ("set user n -1.0", -1.0),
        ("set user n null", nil),
        ("set user n false", false),
        (#"set user t   "x"   "#, "x"),
        ("set\tuser\tt\t\"x\"", "x"),
        (#"SET user t "\u00e9\n""#, "é\n"),
        (#"set user o {"k":"a b c","n":{"m":[]}}"#, ["k": "a b c", "n": ["m": .array([])]]),
    ]

    @Test("set takes the rest of the line as JSON", arguments: setCases)
    func setValue(line: String, value: JSONValue) {
        let result = Self.decoded(line)
        #expect(result?.0 == .set)
        #expect(result?.1["namespace"] == "user")
        #expect(result?.1["value"] == value)
        #expect(result?.1.objectValue?.map(\.0) == ["namespace", "key", "value"])
    }

    @Test func setKeyIsTheThirdWord() {
        #expect(Self.decoded(#"set user theme "dark""#)?.1["key"] == "theme")
    }

    @Test("A set value that is not JSON is InvalidValue", arguments: [
        "set user theme dark",
        "set user theme 'dark'",
        #"set user theme "dark" "light""#,
        #"set user theme {"a":}"#,
        #"set user theme {"a":1,"a":2}"#,
        "set user theme NaN",
        "set user theme 01",
        #"set user theme "unterminated"#,
        "set user theme [" + String(repeating: "[", count: 200),
    ])
    func setInvalidValue(line: String) {
        let error = requestFailure(line)
        #expect(error?.name == .invalidValue)
        #expect(error?.name.rawValue == "io.accountd.InvalidValue")
    }

    @Test("set without a value is InvalidParameter", arguments: ["set", "set user", "set user theme", "  set user theme", "set user theme ", "set user theme\t"])
    func setWithoutValue(line: String) {
        let error = requestFailure(line)
        #expect(error?.name == .invalidParameter)
        #expect(error?.fact("parameter") == "value")
    }

    @Test(
        arguments: ["set user theme  ", "set user theme   ", "set user theme \t", "set user theme\t\t"]
    )
    func setWithoutValueButTrailingBlanks(line: String) {
        // Trailing blanks are ignored everywhere else in the inline form ("switch alice  " is
        // "switch alice"), and with one trailing blank a missing value is InvalidParameter
        // (see setWithoutValue); two or more must not change the answer.
        let error = requestFailure(line)
        #expect(error?.name == .invalidParameter)
        #expect(error?.fact("parameter") == "value")
    }

    @Test("Too many words are InvalidParameter", arguments: [
        ("switch alice bob", "account"),
        ("status alice bob", "account"),
        ("verify a b", "account"),
        ("snapshots a b", "account"),
        ("export alice sql extra", "format"),
        ("restore a s x", "snapshot"),
        ("get n k a x", "account"),
        ("del n k a x", "account"),
        ("keys n a x", "account"),
        ("list details details2", "details"),
        ("list everything", "details"),
    ])
    func tooManyWords(line: String, parameter: String) {
        let error = requestFailure(line)
        #expect(error?.name == .invalidParameter)
        #expect(error?.fact("parameter") == .string(parameter))
    }

    @Test("Methods that take no words refuse one", arguments: ["info x", "ping x", "watch all", "PING  x  y"])
    func noWordsAllowed(line: String) {
        #expect(requestFailure(line)?.name == .invalidParameter)
    }

    @Test("An unknown method word is MethodNotFound, naming it", arguments: [
        "frobnicate", "stat", "statuss", "io.accountd.Status", "switchaccount", "delet", "[1]", "\"status\"",
    ])
    func unknownWord(word: String) {
        let error = requestFailure(word + " alice")
        #expect(error?.name == .methodNotFound)
        #expect(error?.fact("method") == .string(word))
    }

    @Test func inlineRequestsAlwaysHaveMore() throws {
        for line in ["status", "list", "switch alice", "ping", #"set a b 1"#, "migrate --all"] {
            let request = try #require(try Request.decode(bytes(line)))
            #expect(request.more == true, "\(line)")
        }
    }

    @Test("Names are not validated by decode, but by Parameters.account", arguments: ["switch ../etc", "status .hidden", "export -rf sql"])
    func invalidAccountNameSurfacesThroughParameters(line: String) throws {
        let request = try #require(decodedRequest(line))
        let error = #expect(throws: ProtocolError.self) { try request.parameters.account() }
        #expect(error?.name == .invalidAccountName)
        #expect(error?.name.rawValue == "io.accountd.InvalidAccountName")
        #expect(error?.fact("account") == request.parameters["account"])
    }
}
