import Testing
@testable import AccountdProtocol

@Suite("Method: names and properties")
struct MethodTests {
    @Test("Qualified names round-trip", arguments: Method.allCases)
    func qualifiedName(method: Method) {
        #expect(method.qualifiedName == "io.accountd." + method.rawValue)
        #expect(Method(qualifiedName: method.qualifiedName) == method)
    }

    @Test func theMethodsOfSections6And11() {
        #expect(Method.allCases.map(\.rawValue) == [
            "Info", "Ping", "Status", "List", "Switch", "Export", "Verify", "Plan", "Snapshots", "Restore", "Snapshot", "Remove", "Migrate",
            "Get", "Set", "Delete", "Keys", "Watch", "Metrics", "Replication", "Pull", "Query", "Execute", "Import",
        ])
    }

    /// SPEC section 12: `Remove`, `Restore`, `Migrate`, `Pull`, `Plan`, `Verify` (and `Snapshots`,
    /// and `Import`, which reads a file the daemon opens) stay admin-only; the others are open, or need a read or a write grant.
    @Test func adminMethods() {
        #expect(Set(Method.allCases.filter(\.requiresAdmin)) == [.verify, .plan, .snapshots, .restore, .remove, .migrate, .pull, .importAccount])
        #expect(Set(Method.allCases.filter { $0.access == .read }) == [.status, .get, .keys, .export, .query])
        #expect(Set(Method.allCases.filter { $0.access == .write }) == [.switchAccount, .set, .delete, .snapshot, .execute])
        #expect(Set(Method.allCases.filter { $0.access == .open }) == [.info, .ping, .metrics, .list, .watch, .replication])
    }

    @Test func streaming() {
        #expect(Method.allCases.filter { $0.streaming == .required } == [.list, .export, .watch])
        #expect(Method.allCases.filter { $0.streaming == .optional } == [.switchAccount, .migrate, .query])
    }

    @Test("Unknown names are nil", arguments: ["", "Status", "io.accountd.status", "io.accountd.", "IO.ACCOUNTD.Status", "x.io.accountd.Status"])
    func unknownQualified(name: String) {
        #expect(Method(qualifiedName: name) == nil)
    }

    @Test("Unknown inline words are nil", arguments: ["", "de", "dell", "switchaccount", "io.accountd.status", " status"])
    func unknownInline(word: String) {
        #expect(Method(inlineWord: word) == nil)
    }
}
