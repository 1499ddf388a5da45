import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `Import` with replication into a real object store: the imported file would become the
/// replica's newest state within a second, so an import asks the replica first, as a switch
/// that creates does (issue 33: a replica is never hidden by a new file).
@Suite(.enabled(if: TestWeed.available, Comment(rawValue: TestWeed.skipReason)))
struct ObjectStoreImportTests {
    @Test func anImportOfAnAccountTheReplicaHoldsIsRefusedUnlessTheOperatorSaysOtherwise() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let replica = store.replica("fleet")
        let bundle = try ObjectStoreReplicationTests.bundle(dir)
        let (hostA, process) = try ObjectStoreReplicationTests.host(dir, "host-a", replica: replica, bundle: bundle)
        let litestream = try #require(process)
        let client = try hostA.client()
        #expect(try client.callOne("switch u1").parameters["action"] == "created")
        try ObjectStoreReplicationTests.insert(client, "u1", id: 1, name: "in the replica")
        try litestream.syncAndWait(hostA.accountPath("u1"))
        let export = dir.sub("u1.sqlite")
        let exported = try E2E.accountctl(["export", "u1", "--format", "sqlite", "-o", export], socket: hostA.socket)
        try #require(exported.status == 0, "\(exported.stderr)")
        #expect(hostA.stop() == 0)
        litestream.stop()

        // Host B, a fresh data root on the same replica: u1 is in the replica, so importing it
        // would hide that copy: refused, naming the ways on, nothing created.
        let (hostB, _) = try ObjectStoreReplicationTests.host(dir, "host-b", replica: replica, bundle: bundle, litestream: false)
        let refused = try E2E.accountctl(["import", "u1", export], socket: hostB.socket)
        #expect(refused.status == 1 && refused.stderr.contains("AccountExists") && refused.stderr.contains("--over-replica"), "\(refused.stderr)")
        #expect(refused.stderr.contains("accountctl pull u1"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: hostB.accountPath("u1")))
        #expect(Hostile.listing(hostB.dataRoot + "/tmp").filter { $0.hasPrefix("import-") }.isEmpty, "the built file was left in tmp/")
        // Under a name the replica does not hold: imported.
        let renamed = try E2E.accountctl(["import", "u2", export, "--rebind"], socket: hostB.socket)
        #expect(renamed.status == 0, "\(renamed.stdout) \(renamed.stderr) \(hostB.log.suffix(2000))")
        // The operator's explicit choice: over the replica's copy.
        let over = try E2E.accountctl(["--json", "import", "u1", export, "--over-replica"], socket: hostB.socket)
        #expect(over.status == 0, "\(over.stdout) \(over.stderr) \(hostB.log.suffix(2000))")
        #expect(try E2E.sql(hostB.accountPath("u1"), "SELECT name FROM item;") == "in the replica")

        // Host C cannot ask the replica (the store frozen): refused within the deadline, nothing made.
        let (hostC, _) = try ObjectStoreReplicationTests.host(
            dir, "host-c", replica: replica, bundle: bundle, litestream: false, environment: ObjectStoreDeadlineTests.deadline)
        store.freeze()
        defer { store.thaw() }
        let unasked = try ObjectStoreDeadlineTests.accountctl(["import", "u3", export, "--rebind"], socket: hostC.socket)
        #expect(unasked.status == 1 && unasked.stderr.contains("could not be asked"), "\(unasked.stderr)")
        #expect(unasked.seconds < 10, "answered after \(unasked.seconds) s")
        #expect(!FileManager.default.fileExists(atPath: hostC.accountPath("u3")))
    }
}
