import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `Query` and `Execute` reach an account's file as a preference call does: a missing,
/// corrupt or too-new file is refused and left as it was; an outdated one is brought to
/// the bundle's version first; no account named and none active is `NoActiveAccount`.
@Suite struct DataDecisionTableTests {
    @Test func refusedFilesAreLeftAsTheyWere() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try daemon.client()
        let read = "SELECT count(*) FROM user_info"
        let write = [("INSERT INTO user_info(user_name) VALUES ('x')", [JSONValue]())]

        #expect(try client.callOne(DataCalls.line("Query", [("sql", .string(read))])).error == .noActiveAccount)
        #expect(try client.callOne(DataCalls.query("ghost", read)).error == .accountNotFound)
        #expect(try client.callOne(DataCalls.execute("ghost", write)).error == .accountNotFound)
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("ghost")), "nothing was created")

        try E2E.makeTooNewAccount("future", dataRoot: daemon.dataRoot, bundle: Repository.sampleBundle, in: dir)
        let future = Files.bytes(daemon.accountPath("future"))
        #expect(try client.callOne(DataCalls.query("future", read)).error == .accountTooNew)
        #expect(try client.callOne(DataCalls.execute("future", write)).error == .accountTooNew)
        #expect(Files.bytes(daemon.accountPath("future")) == future)
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("future") + "-wal"))

        try Files.write(String(repeating: "not a database ", count: 400), to: daemon.accountPath("junk"))
        let junk = Files.bytes(daemon.accountPath("junk"))
        #expect(try client.callOne(DataCalls.query("junk", read)).error == .accountCorrupt)
        #expect(try client.callOne(DataCalls.execute("junk", write)).error == .accountCorrupt)
        #expect(Files.bytes(daemon.accountPath("junk")) == junk)
    }

    @Test func anOutdatedAccountIsMigratedBeforeTheStatementRuns() throws {
        let dir = TestDirectory()
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: Array(E2E.sampleSteps.prefix(2)))
        let old = try E2E.daemon(directory: dir.path, bundle: v2)
        #expect(try old.client().callOne("switch alice").error == nil)
        #expect(try old.client().callOne("switch bob").error == nil)
        try E2E.sql(old.accountPath("alice"), "INSERT INTO user_info(user_id, user_name, age) VALUES (1, 'Ann', 30);")
        #expect(E2E.stop(old) == 0)

        let daemon = try E2E.daemon(directory: dir.path, bundle: Repository.sampleBundle)
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 2)
        // The statement uses a column of version 3: it runs on the migrated file.
        let reply = try daemon.client().callOne(DataCalls.query("alice", "SELECT user_name, sex FROM user_info"))
        #expect(reply.error == nil, "\(reply.parameters)")
        #expect(reply.parameters["rows"] == [["Ann", nil]])
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 3)
    }
}

/// The connections kept open between requests follow the file: after a restore a Query reads
/// the restored rows, after a removal it is refused.
@Suite struct DataConnectionLifecycleTests {
    @Test func restoreAndRemoveAreSeenAtOnce() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        #expect(try client.callOne("switch bob").error == nil, "alice is not active, so she may be removed")
        let count = "SELECT count(*) FROM user_info"
        #expect(try client.callOne(DataCalls.query("alice", count)).parameters["rows"] == [[2]])
        let snapshot = try client.callOne(#"{"method":"io.accountd.Snapshot","parameters":{"account":"alice"}}"#)
        let name = try #require(snapshot.parameters["snapshot"]?.stringValue, "\(snapshot.parameters)")
        #expect(try client.callOne(DataCalls.execute("alice", [("DELETE FROM user_info", [])])).error == nil)
        #expect(try client.callOne(DataCalls.query("alice", count)).parameters["rows"] == [[0]])

        let restored = try client.callOne(DataCalls.line("Restore", [("account", "alice"), ("snapshot", .string(name))]))
        #expect(restored.error == nil, "\(restored.parameters)")
        #expect(try client.callOne(DataCalls.query("alice", count)).parameters["rows"] == [[2]], "a Query reads the restored file")
        let write = try client.callOne(DataCalls.execute("alice", [("INSERT INTO user_info(user_name) VALUES ('after')", [])]))
        #expect(write.error == nil, "\(write.parameters)")
        #expect(try client.callOne(DataCalls.query("alice", count)).parameters["rows"] == [[3]])

        let removed = try client.callOne(DataCalls.line("Remove", [("account", "alice")]))
        #expect(removed.error == nil, "\(removed.parameters)")
        #expect(try client.callOne(DataCalls.query("alice", count)).error == .accountNotFound)
        #expect(try client.callOne(DataCalls.execute("alice", [("DELETE FROM user_info", [])])).error == .accountNotFound)
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("alice")))
    }
}
