import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// What a `Restore` and a failed snapshot leave behind (issue 29's second hostile round,
/// findings 3 to 5): the snapshot restored outlives the reopen's retention, a linked account
/// file is `AccountCorrupt`, and a full disk leaves neither a doubled message nor a
/// temporary file.
@Suite struct RestoreKeepsItsSnapshotTests {
    /// Finding 3: with `snapshotsToKeep` 3, restoring the active account from its oldest
    /// snapshot, whose reopen migrates and fails, took a `before-migrate` snapshot whose
    /// retention removed the very snapshot restored. Now it stays listed.
    @Test func theReopenOfARestoreKeepsTheSnapshotRestored() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: E2E.sampleSteps)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle, environment: ["ACCOUNTD_ACCOUNTS_SNAPSHOTS_TO_KEEP": "3"])
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch a1").parameters["version"] == 3)
        try E2E.sql(daemon.accountPath("a1"), "INSERT INTO user_info(user_id, user_name) VALUES (1, 'Ann'), (2, 'Ann');")
        try HonestStatusTests.add(4, HonestStatusTests.uniqueNames, to: bundle)
        try HonestStatusTests.reload(daemon, to: 4)
        #expect(waitUntil(timeout: 20) { (try? client.callOne("status"))?.parameters["state"] == "failed" }, "\(daemon.log.suffix(2000))")
        var taken: [String] = []
        for label in ["m1", "m2", "m3"] {
            try E2E.sql(daemon.accountPath("a1"), "INSERT INTO user_info(user_id, user_name) VALUES (1\(taken.count + 3), '\(label)');")
            taken.append(try #require(try client.callOne("snapshot a1 \(label)").parameters["snapshot"]?.stringValue))
        }

        let restore = try client.callOne("restore a1 \(taken[0])")
        #expect(restore.error == nil, "\(restore.encoded())")
        #expect(restore.parameters["reopened"] == "failed", "\(restore.encoded())")
        let names = try AccountLifecycleTests.snapshots("a1", socket: daemon.socket).compactMap { $0["snapshot"]?.stringValue }
        #expect(names.contains(taken[0]), "the snapshot restored is gone: \(names)")
        // It can be restored again, and the file holds its rows.
        #expect(try client.callOne("restore a1 \(taken[0])").error == nil)
        #expect(try E2E.sql(daemon.accountPath("a1"), "SELECT group_concat(user_name) FROM user_info;") == "Ann,Ann,m1")
    }

    /// Finding 4: `restore` of an account whose file is a link answered `InternalError`
    /// ("Too many levels of symbolic links"), logged without the account. Now
    /// `AccountCorrupt`, as every other method, with the link and its target untouched.
    @Test func restoringALinkedAccountIsAccountCorrupt() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket)
        #expect(try client.callOne("switch linked").error == nil)
        #expect(try client.callOne("snapshot linked").error == nil)
        #expect(try client.callOne("switch bob").error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        let accounts = daemon.dataRoot + "/accounts/"
        try FileManager.default.removeItem(atPath: accounts + "linked.sqlite")
        try FileManager.default.createSymbolicLink(atPath: accounts + "linked.sqlite", withDestinationPath: accounts + "bob.sqlite")
        let bob = try #require(Files.bytes(accounts + "bob.sqlite"))
        let snapshotsBefore = Hostile.listing(daemon.dataRoot + "/snapshots/linked")

        let reply = try client.callOne("restore linked")
        #expect(reply.error == .accountCorrupt, "\(reply.encoded())")
        #expect(reply.message?.contains("symbolic link") == true, "\(reply.message ?? "")")
        #expect(Files.bytes(accounts + "bob.sqlite") == bob)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: accounts + "linked.sqlite")) == accounts + "bob.sqlite")
        #expect(Hostile.listing(daemon.dataRoot + "/snapshots/linked") == snapshotsBefore)
        let logged = waitUntil(timeout: 5) {
            !HonestStatusTests.lines(daemon, containing: ["account=linked", "io.accountd.AccountCorrupt"]).isEmpty
        }
        #expect(logged, "no log line naming the account: \(daemon.log.suffix(2000))")
        // `list details` calls it corrupt.
        let listed = try client.call("list details").first { $0.parameters["account"] == "linked" }
        #expect(listed?.parameters["state"] == "corrupt", "\(String(describing: listed?.encoded()))")
    }

    /// Finding 5: on a full disk, a failed `snapshot` said "taking a snapshot ... failed"
    /// twice, and a failed `remove` left a 0-byte `.…tmp` in the account's snapshot folder.
    @Test func aFullDiskLeavesNoTemporarySnapshotAndSaysItOnce() throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        let tmpfs = try Hostile.Tmpfs.mounted(at: dataRoot, kibibytes: 16 * 1024)
        defer { tmpfs.unmount() }
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        try Hostile.makeItemAccount("big", rows: FaultTests.rows, dataRoot: dataRoot, bundle: v1)
        let daemon = try E2E.daemon(directory: dir.path, bundle: v1)
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("snapshot big").error == nil)
        Hostile.fillLeaving(64 * 1024, folder: dataRoot, path: dataRoot + "/filler")

        let snapshot = try client.callOne("snapshot big")
        #expect(snapshot.error != nil, "\(snapshot.encoded())")
        let message = snapshot.message ?? ""
        #expect(message.components(separatedBy: "taking a snapshot").count == 2, "said more than once: \(message)")
        for request in ["remove big", "restore big"] {
            let reply = try client.callOne(request)
            #expect(reply.error != nil, "\(request) -> \(reply.encoded())")
            let left = Hostile.listing(dataRoot + "/snapshots/big").filter { $0.hasPrefix(".") || !$0.hasSuffix(".sqlite") }
            #expect(left == [], "\(request) left \(left)")
        }
        #expect(try client.callOne("status big").parameters["state"] == "current")
    }
}
