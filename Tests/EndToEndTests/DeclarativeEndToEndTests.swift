import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Declarative bundles through the real binaries: `accountd plan` offline, `accountctl plan`
/// against a running daemon, a lossy switch refused with the file unchanged, and a drifted
/// schema that `verify` reports and `plan` repairs.
@Suite struct DeclarativeEndToEndTests {
    static let v1 = "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT);\n"
    static let v2 = "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT NOT NULL DEFAULT '', c INTEGER);\n"

    @Test func planIsPrintedByBothProgramsAndALossySwitchIsRefused() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.writeDeclarative(at: dir.sub("v1"), version: 1, schema: Self.v1)
        let v2 = try BundleFixture.writeDeclarative(at: dir.sub("v2"), version: 2, schema: Self.v2)
        let dataRoot = dir.sub("data")
        let created = try E2E.run(Binaries.accountd, ["migrate", "--data-root", dataRoot, "--schema", v1, "--create", "alice"])
        #expect(created.status == 0, "\(created.stderr)")
        let path = dataRoot + "/accounts/alice.sqlite"
        try E2E.sql(path, "INSERT INTO t VALUES (1, NULL, 'kept?'), (2, 'x', NULL);")
        let before = Files.bytes(path)

        let offline = try E2E.run(Binaries.accountd, ["plan", "--schema", v2, "--data-root", dataRoot, "alice"])
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(offline.stdout.hasPrefix("-- account alice: version 1 to 2, 1 step(s)"), "\(offline.stdout)")
        #expect(offline.stdout.contains("-- step 1 LOSSY\n-- lossy: table t: column b holds 1 non-NULL value(s)"), "\(offline.stdout)")
        #expect(offline.stdout.contains("coalesce(\"a\", '')"), "a NULL meets the new NOT NULL DEFAULT: \(offline.stdout)")
        #expect(Files.bytes(path) == before, "planning changes nothing")

        let daemon = try E2E.daemon(directory: dir.path, bundle: v2)
        let online = try E2E.accountctl(["plan", "alice"], socket: daemon.socket)
        #expect(online.status == 0, "\(online.stderr)")
        #expect(online.stdout == offline.stdout)
        let json = try E2E.accountctl(["--json", "plan", "alice"], socket: daemon.socket)
        let reply = try PlanReply(parameters: try JSONParser.parse(json.stdout.trimmingCharacters(in: .newlines)))
        #expect(reply.fromVersion == 1 && reply.version == 2 && reply.steps.map(\.lossy) == [true])

        let refused = try E2E.accountctl(["switch", "alice"], socket: daemon.socket)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("MigrationFailed") && refused.stderr.contains("column b holds 1 non-NULL value(s)"), "\(refused.stderr)")
        #expect(Files.bytes(path) == before, "a refused plan leaves the file byte-for-byte unchanged")
    }

    @Test func verifyReportsDriftAndPlanShowsTheRepair() throws {
        let dir = TestDirectory()
        let v2 = try BundleFixture.writeDeclarative(at: dir.sub("v2"), version: 2, schema: Self.v2)
        let daemon = try E2E.daemon(directory: dir.path, bundle: v2)
        #expect(try E2E.accountctl(["switch", "bob"], socket: daemon.socket).status == 0)
        #expect(try E2E.accountctl(["switch", "carol"], socket: daemon.socket).status == 0)
        try E2E.sql(daemon.accountPath("bob"), "CREATE INDEX t_extra ON t(c);")

        let verify = try E2E.accountctl(["verify", "bob"], socket: daemon.socket)
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("index t_extra") && verify.stdout.contains("'accountctl plan bob' shows the repair"), "\(verify.stdout)")
        let plan = try E2E.accountctl(["plan", "bob"], socket: daemon.socket)
        #expect(plan.stdout.contains("-- account bob: version 2 to 2, 1 step(s)") && plan.stdout.contains("DROP INDEX \"t_extra\";"), "\(plan.stdout)")
        #expect(try E2E.accountctl(["plan", "carol"], socket: daemon.socket).stdout.contains("nothing to do"))
    }
}
