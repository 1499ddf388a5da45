import Testing
@testable import AccountdProtocol

@Suite("AccountName: SPEC section 2")
struct AccountNameTests {
    static let allowed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._+-"

    @Test("Valid names", arguments: [
        "a", "Z", "0", "alice", "Alice", "alice@example.org", "first.last", "a_b", "a+tag", "a-b",
        "a..b", "a.", "a-", "@", "_", "+", "@home", "_private", "+1", "007", "ALL-CAPS_09",
        String(repeating: "a", count: 128), "x" + String(repeating: "-", count: 127),
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._+-",
    ])
    func valid(name: String) throws {
        let account = try AccountName(name)
        #expect(account.rawValue == name)
        #expect(account.description == name)
        #expect(AccountName.problem(in: name) == nil)
    }

    @Test("Invalid names", arguments: [
        "", ".", "..", "...", ".hidden", ".a", "-", "-a", "--all", "-rf",
        "/", "a/b", "/etc", "../x", "a/../b", "./a",
        "\u{0}", "a\u{0}", "a\u{0}b",
        " ", " a", "a ", "a b", "\t", "a\tb", "a\nb", "a\r", "\u{1B}", "a\u{7F}", "\u{1F}",
        "é", "café", "e\u{301}", "ü", "ß", "Ω", "а", "ａ", "😀", "a\u{200B}b", "\u{FEFF}a", "\u{A0}",
        "a:b", "a*b", "a?b", "a\\b", "a\"b", "a'b", "a,b", "a;b", "a|b", "a$b", "a%b", "a~b", "a#b", "a=b", "(a)",
        String(repeating: "a", count: 129), String(repeating: "a", count: 1000),
    ])
    func invalid(name: String) {
        let error = #expect(throws: InvalidAccountName.self) { try AccountName(name) }
        #expect(error?.name == name)
        #expect(error?.reason.isEmpty == false)
        #expect(AccountName.problem(in: name) != nil)
    }

    @Test func lengthLimitIs128Characters() throws {
        #expect(AccountName.maximumLength == 128)
        #expect(try AccountName(String(repeating: "b", count: 128)).rawValue.count == 128)
        #expect(throws: InvalidAccountName.self) { try AccountName(String(repeating: "b", count: 129)) }
    }

    @Test func everyAllowedCharacterWorksInTheMiddle() throws {
        for character in Self.allowed {
            let name = "a\(character)z"
            #expect(try AccountName(name).rawValue == name)
        }
    }

    @Test func everyOtherASCIICharacterIsRefusedInTheMiddle() {
        for code in UInt8(0)...UInt8(127) where !Self.allowed.utf8.contains(code) {
            let name = "a" + String(UnicodeScalar(code)) + "z"
            #expect(throws: InvalidAccountName.self, "U+\(code)") { try AccountName(name) }
        }
    }

    @Test func everyAllowedCharacterButDotAndDashMayStartAName() {
        for character in Self.allowed {
            let refused = (try? AccountName("\(character)a")) == nil
            #expect(refused == (character == "." || character == "-"), "\(character)")
        }
    }

    @Test func theMessageEscapesControlCharactersAndShortensLongNames() {
        let control = InvalidAccountName(name: "a\nb\u{0}", reason: "r")
        #expect(control.description == #"invalid account name "a\u{a}b\u{0}": r"#)
        let long = InvalidAccountName(name: String(repeating: "x", count: 200), reason: "r")
        #expect(long.description == "invalid account name \"" + String(repeating: "x", count: 64) + "…\": r")
        #expect(AccountName.quoted(#"a"b\c"#) == #""a\"b\\c""#)
    }

    @Test func reasonsSayWhichRuleBroke() {
        #expect(AccountName.problem(in: "")?.contains("empty") == true)
        #expect(AccountName.problem(in: String(repeating: "a", count: 129))?.contains("129") == true)
        #expect(AccountName.problem(in: ".x")?.contains("'.'") == true)
        #expect(AccountName.problem(in: "a/b")?.contains("'/'") == true)
        #expect(AccountName.problem(in: "a b")?.contains("space") == true)
        #expect(AccountName.problem(in: "a\u{0}b")?.contains("NUL") == true)
        #expect(AccountName.problem(in: "a\u{1B}b")?.contains("U+1B") == true)
    }

    @Test func comparesByRawValue() throws {
        let names = try ["bob", "Alice", "alice", "0"].map { try AccountName($0) }
        #expect(names.sorted().map(\.rawValue) == ["0", "Alice", "alice", "bob"])
        #expect(try AccountName("alice") == AccountName("alice"))
        #expect(try AccountName("alice") != AccountName("Alice"))
    }
}
