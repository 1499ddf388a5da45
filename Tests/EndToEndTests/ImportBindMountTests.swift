import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Import refuses a live account file reached through a bind mount of the single file: it
/// has one link, no symbolic link and no `-wal` beside it, but it is the same file (same
/// `st_dev` and `st_ino`) as the account's, whose last transactions are in the WAL beside
/// the real name (hostile33b N5: the import succeeded and dropped the WAL's rows).
@Suite struct ImportBindMountTests {
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount"), "needs root and mount(8) for a bind mount"))
    func aBindMountedLiveAccountFileIsRefused() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let daemon = try ImportTests.daemon(directory: dir.sub("host"), bundle: bundle)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        try ReplicationTests.set(client, "word", "in the wal", account: "alice")
        let single = dir.sub("imp/single.sqlite")
        try FileManager.default.createDirectory(atPath: dir.sub("imp"), withIntermediateDirectories: true)
        try Files.write("", to: single)
        let mounted = try E2E.run("/usr/bin/mount", ["--bind", daemon.accountPath("alice"), single])
        try #require(mounted.status == 0, "mount --bind: \(mounted.stderr)")
        defer { _ = try? E2E.run("/usr/bin/umount", [single]) }

        let refused = try ImportTests.importing(client, "imx6", single, rebind: true)
        #expect(refused.error == .invalidParameter, "\(refused.error?.rawValue ?? "ok") \(refused.parameters)")
        #expect("\(refused.parameters)".contains("same file"), "\(refused.parameters)")
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("imx6")))
        #expect(Hostile.listing(daemon.dataRoot + "/tmp").filter { $0.hasPrefix("import-") }.isEmpty)
    }

    /// A bind mount of ANOTHER daemon's live account file (issue 33's third review, F-a): not
    /// a file of this data root, one link, no `-wal` beside the mount, so it was imported
    /// silently with none of the rows in that daemon's WAL. The other daemon's connection
    /// holds a lock on it (`/proc/locks`): the import is refused, saying so, nothing changed.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount"), "needs root and mount(8) for a bind mount"))
    func aBindMountedLiveFileOfAnotherDaemonIsRefused() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let hostA = try ImportTests.daemon(directory: dir.sub("host-a"), bundle: bundle)
        let hostB = try ImportTests.daemon(directory: dir.sub("host-b"), bundle: bundle)
        let clientB = try hostB.client()
        #expect(try clientB.callOne("switch alice").parameters["action"] == "created")
        try ReplicationTests.set(clientB, "word", "in the wal", account: "alice")
        let single = dir.sub("imp/single.sqlite")
        try FileManager.default.createDirectory(atPath: dir.sub("imp"), withIntermediateDirectories: true)
        try Files.write("", to: single)
        let mounted = try E2E.run("/usr/bin/mount", ["--bind", hostB.accountPath("alice"), single])
        try #require(mounted.status == 0, "mount --bind: \(mounted.stderr)")
        defer { _ = try? E2E.run("/usr/bin/umount", [single]) }

        let refused = try ImportTests.importing(try hostA.client(), "alice", single, rebind: true)
        #expect(refused.error == .invalidParameter, "\(refused.error?.rawValue ?? "ok") \(refused.parameters)")
        #expect("\(refused.parameters)".contains("held locked by another process"), "\(refused.parameters)")
        #expect(!FileManager.default.fileExists(atPath: hostA.accountPath("alice")))
        #expect(Hostile.listing(hostA.dataRoot + "/tmp").filter { $0.hasPrefix("import-") }.isEmpty)
    }
}
