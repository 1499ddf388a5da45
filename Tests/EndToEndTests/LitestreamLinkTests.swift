import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `litestream restore -o FILE` writes through `FILE.tmp`, following a link there. accountd
/// has Litestream restore into a private folder made afresh, so a link planted at the names
/// Litestream used to write through (`accounts/.<account>.sqlite.pulling.tmp`,
/// `.rewinding.tmp`, `<root>/.device.sqlite.pulling.tmp`) is never followed; run as root on
/// another user's data root, `accountd pull` runs Litestream as that user (hostile33c #12).
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct LitestreamLinkTests {
    static let victimText = "precious: not accountd's to write\n"

    /// A file outside every data root, and a link to it planted at `link`.
    static func plant(_ link: String, victim: String) throws {
        try Files.write(Self.victimText, to: victim)
        #expect(symlink(victim, link) == 0, "planting \(link): \(String(cString: strerror(errno)))")
    }

    static func untouched(_ victim: String) -> Bool {
        (try? String(contentsOfFile: victim, encoding: .utf8)) == Self.victimText
    }

    /// A replica holding alice (one row) and device.sqlite (a `switch` preference), from a
    /// host that is then stopped; returns the replica, the bundle and the stopped host's daemon.
    static func replicaWithAlice(_ dir: borrowing TestDirectory) throws -> (replica: String, bundle: String, daemon: DaemonProcess, litestream: LitestreamProcess) {
        let host = try ReplicationTests.replicatingHost(dir)
        let client = try host.daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        _ = try E2E.sql(host.daemon.accountPath("alice"), "INSERT INTO item (name, n) VALUES ('kept', 7);")
        let set = try client.callOne(E2E.request("Set", [("namespace", "switch"), ("key", "kiosk"), ("value", "lobby")]))
        try #require(set.error == nil, "\(set)")
        try host.litestream.syncAndWait(host.daemon.accountPath("alice"))
        try host.litestream.syncAndWait(host.daemon.dataRoot + "/device.sqlite")
        return host
    }

    @Test func linksAtLitestreamsOldTemporaryNamesAreNeverFollowedByTheDaemon() throws {
        let dir = TestDirectory()
        let (replica, bundle, daemon, litestream) = try Self.replicaWithAlice(dir)
        defer { withExtendedLifetime(litestream) {} }

        // restore --at: a link at .alice.sqlite.rewinding.tmp.
        let rewinding = dir.sub("victim-rewinding.txt")
        try Self.plant(daemon.dataRoot + "/accounts/.alice.sqlite.rewinding.tmp", victim: rewinding)
        let restored = try E2E.accountctl(["restore", "alice", "--at", ObjectStoreReplicationTests.rfc3339(Date())], socket: daemon.socket)
        #expect(restored.status == 0, "\(restored.stdout) \(restored.stderr)")
        #expect(Self.untouched(rewinding), "restore --at wrote through the planted link")

        // A fresh host: links at .device.sqlite.pulling.tmp (the start-up pull) and .alice.sqlite.pulling.tmp.
        let rootB = dir.sub("host-b/data")
        try FileManager.default.createDirectory(atPath: rootB + "/accounts", withIntermediateDirectories: true)
        let device = dir.sub("victim-device.txt")
        let pulling = dir.sub("victim-pulling.txt")
        try Self.plant(rootB + "/.device.sqlite.pulling.tmp", victim: device)
        try Self.plant(rootB + "/accounts/.alice.sqlite.pulling.tmp", victim: pulling)
        let hostB = try E2E.replicatingDaemon(directory: dir.sub("host-b"), bundle: bundle, replica: replica, runDirectory: dir.sub("run-b"))
        var kiosk = ""
        let pulledDevice = waitUntil(timeout: 30, interval: 0.2) {
            let got = try? hostB.client().callOne(E2E.request("Get", [("namespace", "switch"), ("key", "kiosk")]))
            kiosk = "\(String(describing: got))"
            return got?.parameters["value"] == "lobby"
        }
        #expect(pulledDevice, "\(kiosk) \(hostB.log.suffix(2000))")
        #expect(Self.untouched(device), "the start-up pull of device.sqlite wrote through the planted link")
        let pulled = try E2E.accountctl(["pull", "alice"], socket: hostB.socket)
        #expect(pulled.status == 0, "\(pulled.stdout) \(pulled.stderr)")
        #expect(Self.untouched(pulling), "the pull wrote through the planted link")
        #expect(try E2E.sql(hostB.accountPath("alice"), "SELECT n FROM item WHERE name = 'kept';") == "7")
    }

    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv"))
    func anOfflinePullAsRootOnAnotherUsersDataRootWritesNothingThatUserCannot() throws {
        let dir = TestDirectory()
        let (replica, _, daemon, litestream) = try Self.replicaWithAlice(dir)
        _ = E2E.stop(daemon, timeout: 30)
        litestream.stop()
        // The data root and the replica belong to nobody (65534); the victim is root's alone.
        #expect(chmod(dir.path, 0o755) == 0)
        let root = dir.sub("nobody/data")
        try FileManager.default.createDirectory(atPath: root + "/accounts", withIntermediateDirectories: true)
        let chowned = try E2E.run("/bin/chown", ["-R", "65534:65534", dir.sub("nobody"), String(replica.dropFirst("file://".count))])
        try #require(chowned.status == 0, "\(chowned.stderr)")
        let victim = dir.sub("root-only.txt")
        try Files.write(Self.victimText, to: victim)
        #expect(chmod(victim, 0o600) == 0)
        // The data root's owner plants the link, as it may.
        let planted = try E2E.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/ln", "-s", victim, root + "/accounts/.alice.sqlite.pulling.tmp"])
        try #require(planted.status == 0, "\(planted.stderr)")

        // Litestream, wrapped to say which user it runs as.
        let said = dir.sub("nobody/litestream-uid")
        let wrapper = dir.sub("litestream-as")
        try Files.write("#!/bin/sh\nid -u > \(said)\nexec \(TestLitestream.path!) \"$@\"\n", to: wrapper)
        #expect(chmod(wrapper, 0o755) == 0)

        let pulled = try E2E.run(Binaries.accountd, ["pull", "--replica", replica, "--data-root", root, "--litestream", wrapper, "alice"])
        #expect(pulled.status == 0, "\(pulled.stdout) \(pulled.stderr)")
        #expect((try? String(contentsOfFile: said, encoding: .utf8)) == "65534\n", "Litestream ran as root on nobody's data root")
        #expect(Self.untouched(victim), "a root-run pull wrote a root-only file through the data root owner's link")
        #expect(try E2E.sql(root + "/accounts/alice.sqlite", "SELECT n FROM item WHERE name = 'kept';") == "7")
        var info = stat()
        #expect(stat(root + "/accounts/alice.sqlite", &info) == 0 && info.st_uid == 65534, "the pulled file is the data root owner's")
    }
}
