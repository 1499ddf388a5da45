import Testing

@testable import AccountdDaemon

/// Users and groups in the config by name or id (issue 31's hostile review, finding 8): a
/// grant for the user named `31337` went to uid 31337, another person.
@Suite struct NameOrIDTests {
    /// Names as a `getpwnam` would find them: `31337` is the name of uid 1006.
    static func lookup(_ name: String) -> UInt32? { ["alice": 1000, "31337": 1006, "1000": 1000][name] }

    @Test func namesAndIdsResolveAndANumberThatIsAnotherIdsNameIsRefused() throws {
        #expect(try NameOrID.resolve("alice", kind: "user", lookup: Self.lookup) == 1000)
        #expect(try NameOrID.resolve(" 4242 ", kind: "user", lookup: Self.lookup) == 4242)
        #expect(try NameOrID.resolve("+31337", kind: "user", lookup: Self.lookup) == 31337)
        #expect(try NameOrID.resolve("+1006", kind: "user", lookup: Self.lookup) == 1006)
        // A user named like its own uid is no ambiguity.
        #expect(try NameOrID.resolve("1000", kind: "user", lookup: Self.lookup) == 1000)
        #expect(try NameOrID.resolve("nobody-here", kind: "user", lookup: Self.lookup) == nil)
        #expect(try NameOrID.resolve("", kind: "user", lookup: Self.lookup) == nil)
        #expect {
            try NameOrID.resolve("31337", kind: "user", lookup: Self.lookup)
        } throws: { error in
            let message = (error as? NameOrID.Ambiguous)?.message ?? ""
            return message.contains("+31337") && message.contains("+1006")
        }
    }
}
