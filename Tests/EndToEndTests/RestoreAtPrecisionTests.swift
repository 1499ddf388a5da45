import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `restore --at` reports the time the restored state really has, to the millisecond
/// Litestream compares at (issue 33's third review, F-c): it reported the time cut to the
/// second (…09.000) for a state holding a write acknowledged at …09.387, and a restore at
/// that reported time gave an older state.
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct RestoreAtPrecisionTests {
    @Test func theReportedTimeHoldsTheStateAndGivesItBack() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let a = try MoveTests.host(dir, "a", bundle: bundle)
        let client = try a.daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        try ReplicationTests.set(client, "word", "zero", account: "alice")
        try a.litestream.syncAndWait(a.daemon.accountPath("alice"))
        Thread.sleep(forTimeInterval: 1.1)
        // Well inside a second, so that a time cut to the second is visibly earlier.
        #expect(waitUntil(timeout: 3, interval: 0.01) {
            let fraction = Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 1)
            return fraction > 0.2 && fraction < 0.6
        })
        let before = Date()
        try ReplicationTests.set(client, "word", "one", account: "alice")
        try a.litestream.syncAndWait(a.daemon.accountPath("alice"))
        let asked = Date()
        Thread.sleep(forTimeInterval: 1.2)
        try ReplicationTests.set(client, "word", "two", account: "alice")
        try a.litestream.syncAndWait(a.daemon.accountPath("alice"))

        let first = try E2E.accountctl(["--json", "restore", "alice", "--at", ObjectStoreReplicationTests.rfc3339(asked)], socket: a.daemon.socket)
        try #require(first.status == 0, "\(first.stdout) \(first.stderr) \(a.daemon.log.suffix(2000))")
        #expect(try ReplicationTests.get(client, "word", account: "alice") == "one")
        let reported = try #require(try JSONParser.parse(first.stdout)["at"]?.stringValue, "\(first.stdout)")
        let at = try #require(ObjectStoreReplicationTests.date(reported), "\(reported)")
        // The state holds a write made after `before`: its time is not earlier than that.
        #expect(at >= before.addingTimeInterval(-0.001) && at <= asked, "written after \(ObjectStoreReplicationTests.rfc3339(before)), reported \(reported)")

        // A restore at the reported time gives that very state, and reports the same time.
        try ReplicationTests.set(client, "word", "three", account: "alice")
        let again = try E2E.accountctl(["--json", "restore", "alice", "--at", reported], socket: a.daemon.socket)
        try #require(again.status == 0, "\(again.stdout) \(again.stderr)")
        #expect(try ReplicationTests.get(client, "word", account: "alice") == "one", "a restore at the reported \(reported) gave another state")
        #expect(try JSONParser.parse(again.stdout)["at"]?.stringValue == reported, "\(again.stdout)")
    }
}
