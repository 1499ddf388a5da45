import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The handoff's fence carried in the account file (hostile33e #7, hostile33f #3): after a
/// machine loss the old host's `moved/` records are gone, and a rebuilt host on the same
/// replica pulled (or, with `onCreate: pull`, switched to) its own pre-handoff copy while the
/// new owner served the account. The copy says it was handed off; the rebuilt host refuses it.
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct HandoffMarkTests {
    static func count(_ path: String, _ sql: String) throws -> String { try E2E.sql(path, sql) }

    @Test func aRebuiltHostRefusesTheCopyItHandedOffAndTheNewOwnerKeepsNoMark() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let a = try MoveTests.host(dir, "a", bundle: bundle)
        let aClient = try a.daemon.client()
        #expect(try aClient.callOne("switch alice").parameters["action"] == "created")
        _ = try MoveTests.execute(aClient, account: "alice", "INSERT INTO item(name, n) VALUES ('before', 1)", [])
        #expect(try aClient.callOne("switch bob").error == nil)
        try a.litestream.syncAndWait(a.daemon.accountPath("alice"))
        let handoff = try E2E.accountctl(["remove", "alice", "--handoff"], socket: a.daemon.socket)
        try #require(handoff.status == 0, "\(handoff.stdout) \(handoff.stderr) \(a.daemon.log.suffix(2000))")

        // Host B takes it (a move), and its file carries no mark: its own replica never will.
        let b = try MoveTests.host(dir, "b", bundle: bundle)
        let pulled = try E2E.accountctl(["pull", "alice", "--replica", a.replica], socket: b.daemon.socket)
        try #require(pulled.status == 0, "\(pulled.stdout) \(pulled.stderr) \(b.daemon.log.suffix(2000))")
        #expect(try Self.count(b.daemon.accountPath("alice"), "SELECT count(*) FROM accountd_meta WHERE key = 'handed_off_from';") == "0")
        #expect(try Self.count(b.daemon.accountPath("alice"), "SELECT name FROM item;") == "before")

        // Host A is lost; a rebuilt A on the same replica (its moved/ records gone) with onCreate: pull.
        a.litestream.stop(signal: SIGKILL)
        #expect(E2E.stop(a.daemon, signal: SIGKILL, timeout: 30) != nil)
        var environment = E2E.replicationEnvironment(replica: a.replica, runDirectory: dir.sub("run-a2"))
        environment["ACCOUNTD_REPLICATION_LITESTREAM_ON_CREATE"] = "pull"
        try FileManager.default.createDirectory(atPath: dir.sub("host-a2"), withIntermediateDirectories: true)
        let rebuilt = try E2E.daemon(directory: dir.sub("host-a2"), bundle: bundle, environment: environment)
        let client = try rebuilt.client()
        let switched = try client.callOne("switch alice")
        #expect(switched.error == .accountMoved, "\(switched) \(rebuilt.log.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: rebuilt.accountPath("alice")), "the rebuilt host made or pulled alice")
        let plain = try E2E.accountctl(["pull", "alice"], socket: rebuilt.socket)
        #expect(plain.status != 0 && plain.stderr.contains("handed off") && plain.stderr.contains("--reclaim"), "\(plain)")
        #expect(!FileManager.default.fileExists(atPath: rebuilt.accountPath("alice")))
        // Offline, the same, and through a link to the replica's folder (hostile33g #2).
        let offline = try E2E.pullOffline("alice", replica: a.replica, dataRoot: dir.sub("offline"))
        #expect(offline.status == 1 && offline.stderr.contains("handed off"), "\(offline)")
        try FileManager.default.createSymbolicLink(atPath: dir.sub("replink"), withDestinationPath: dir.path)
        let linked = try E2E.pullOffline("alice", replica: "file://" + dir.sub("replink/replica-a"), dataRoot: dir.sub("offline-linked"))
        #expect(linked.status == 1 && linked.stderr.contains("handed off"), "\(linked)")
        // A restore at a time brings no account that has no file here (hostile33g #1).
        let restored = try E2E.accountctl(["restore", "alice", "--at", ObjectStoreReplicationTests.rfc3339(Date())], socket: rebuilt.socket)
        #expect(restored.status != 0 && restored.stderr.contains("accountctl pull alice"), "\(restored)")
        #expect(!FileManager.default.fileExists(atPath: rebuilt.accountPath("alice")))

        // Taken back on purpose: it comes, without the mark.
        let reclaimed = try E2E.accountctl(["pull", "alice", "--reclaim"], socket: rebuilt.socket)
        try #require(reclaimed.status == 0, "\(reclaimed.stdout) \(reclaimed.stderr) \(rebuilt.log.suffix(2000))")
        #expect(try Self.count(rebuilt.accountPath("alice"), "SELECT count(*) FROM accountd_meta WHERE key = 'handed_off_from';") == "0")
        #expect(try client.callOne("switch alice").error == nil)
    }

    /// A handoff whose final sync fails leaves the account here, and no mark in its file.
    @Test func aHandoffThatDidNotHappenLeavesNoMark() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let a = try MoveTests.host(dir, "a", bundle: bundle)
        let client = try a.daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        #expect(try client.callOne("switch bob").error == nil)
        // No Litestream: the final sync cannot happen, so the handoff is refused.
        a.litestream.stop(signal: SIGKILL)
        try? FileManager.default.removeItem(atPath: a.litestream.socket)
        let handoff = try E2E.accountctl(["remove", "alice", "--handoff"], socket: a.daemon.socket)
        #expect(handoff.status != 0, "\(handoff)")
        #expect(try Self.count(a.daemon.accountPath("alice"), "SELECT count(*) FROM accountd_meta WHERE key = 'handed_off_from';") == "0")
        #expect(try client.callOne("switch alice").error == nil)
    }

    /// hostile33g #3: a crash while a pull ended a handoff (after the file was linked into
    /// place, before the record was erased) left the host refusing the account it held, for
    /// good. At start, a record beside a file without the handoff's mark is such a pull: the
    /// record goes, and the account is served.
    @Test func aPullBackInterruptedAfterItsLinkIsFinishedAtStart() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let a = try MoveTests.host(dir, "a", bundle: bundle)
        let aClient = try a.daemon.client()
        #expect(try aClient.callOne("switch alice").parameters["action"] == "created")
        _ = try MoveTests.execute(aClient, account: "alice", "INSERT INTO item(name, n) VALUES ('on-a', 1)", [])
        #expect(try aClient.callOne("switch bob").error == nil)
        try a.litestream.syncAndWait(a.daemon.accountPath("alice"))
        let handoff = try E2E.accountctl(["remove", "alice", "--handoff"], socket: a.daemon.socket)
        try #require(handoff.status == 0, "\(handoff.stdout) \(handoff.stderr)")
        let b = try MoveTests.host(dir, "b", bundle: bundle)
        let pulled = try E2E.accountctl(["pull", "alice", "--replica", a.replica], socket: b.daemon.socket)
        try #require(pulled.status == 0, "\(pulled.stdout) \(pulled.stderr)")
        #expect(E2E.stop(b.daemon, timeout: 30) == 0)

        // A's pull back, as a crash right after its link leaves it: B's copy in place, A's record kept.
        #expect(E2E.stop(a.daemon, timeout: 30) == 0)
        try FileManager.default.copyItem(atPath: b.daemon.accountPath("alice"), toPath: a.daemon.accountPath("alice"))
        #expect(FileManager.default.fileExists(atPath: a.daemon.dataRoot + "/moved/alice"))
        try a.daemon.restart()
        let again = try a.daemon.client()
        #expect(try again.callOne("switch alice").error == nil, "\(a.daemon.log.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: a.daemon.dataRoot + "/moved/alice"))
        #expect(a.daemon.log.contains("interrupted by a crash after the file was put in place"), "\(a.daemon.log.suffix(2000))")

        // A handoff a crash interrupted the other way (the mark and the record written, the file here) stays refused.
        #expect(try again.callOne("switch bob").error == nil)
        try a.litestream.syncAndWait(a.daemon.accountPath("alice"))
        let second = try E2E.accountctl(["remove", "alice", "--handoff"], socket: a.daemon.socket)
        try #require(second.status == 0, "\(second.stdout) \(second.stderr)")
        #expect(E2E.stop(a.daemon, timeout: 30) == 0)
        let snapshot = try #require(try FileManager.default.contentsOfDirectory(atPath: a.daemon.dataRoot + "/snapshots/alice").filter { $0.contains("before-remove") }.sorted().last)
        try FileManager.default.copyItem(atPath: a.daemon.dataRoot + "/snapshots/alice/" + snapshot, toPath: a.daemon.accountPath("alice"))
        try a.daemon.restart()
        #expect(try a.daemon.client().callOne("switch alice").error == .accountMoved)
    }
}
