import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The move drill of ``MoveTests`` through a real object store: two hosts (two data roots,
/// each with its own daemon and Litestream 0.5) replicating into SeaweedFS's S3 gateway,
/// `remove alice --handoff` on A under a write load, `pull alice --replica A's S3 URL` on B.
@Suite(.enabled(if: TestWeed.available, Comment(rawValue: TestWeed.skipReason)))
struct ObjectStoreMoveTests {
    @Test func aMoveThroughTheObjectStoreUnderWriteLoadLosesNothingAcknowledged() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let bundle = try ObjectStoreReplicationTests.bundle(dir)
        let replicaA = store.replica("host-a")
        let (a, processA) = try ObjectStoreReplicationTests.host(dir, "host-a", replica: replicaA, bundle: bundle)
        let (b, _) = try ObjectStoreReplicationTests.host(dir, "host-b", replica: store.replica("host-b"), bundle: bundle)
        let litestreamA = try #require(processA)
        let clientA = try a.client()
        #expect(try clientA.callOne("switch alice").parameters["action"] == "created")
        #expect(try clientA.callOne("switch other").parameters["action"] == "created")
        try ReplicationTests.set(clientA, "before", "move", account: "alice")
        #expect(litestreamA.waitUntilReplicating(a.accountPath("alice")), "\(litestreamA.log.suffix(2000))")

        // Four clients write alice (rows with Execute, preferences with Set) until A refuses them.
        let acknowledged = E2E.Locked<[String]>([])
        let refusals = E2E.Locked<[String]>([])
        let finished = E2E.Locked(0)
        let socket = a.socket
        // Threads of their own: the writers block on their sockets for as long as the test runs.
        for index in 0..<4 {
            Thread.detachNewThread {
                defer { finished.withLock { $0 += 1 } }
                MoveTests.write(index, socket: socket, acknowledged: acknowledged, refusals: refusals)
            }
        }
        Thread.sleep(forTimeInterval: 1.5)
        let handoff = try E2E.accountctl(["--json", "remove", "alice", "--handoff"], socket: socket)
        #expect(waitUntil(timeout: 60) { finished.current == 4 }, "the writers did not stop after the handoff")
        try #require(handoff.status == 0, "handoff: \(handoff.stdout) \(handoff.stderr) \(a.log.suffix(3000))")
        #expect(acknowledged.current.count > 8, "the writers barely wrote: \(acknowledged.current.count)")
        #expect(refusals.current.count == 4 && refusals.current.allSatisfy { $0 == "AccountMoved" }, "\(refusals.current)")

        // B pulls alice from A's replica in the bucket: one command.
        let pulled = try E2E.accountctl(["--json", "pull", "alice", "--replica", replicaA], socket: b.socket)
        try #require(pulled.status == 0, "\(pulled.stdout) \(pulled.stderr) \(b.log.suffix(2000))")

        // Every acknowledged write is on B, and A refuses alice.
        let clientB = try b.client()
        #expect(try clientB.callOne("switch alice").parameters["action"] == "opened")
        let (missing, keys) = try MoveTests.missing(acknowledged.current, on: b, client: clientB)
        #expect(missing.isEmpty, "acknowledged on A but not on B: \(missing.prefix(20)) of \(missing.count)")
        #expect(keys.contains("before"))
        #expect(try clientA.callOne("switch alice").error == .accountMoved)
        #expect(!FileManager.default.fileExists(atPath: a.accountPath("alice")))
    }
}
