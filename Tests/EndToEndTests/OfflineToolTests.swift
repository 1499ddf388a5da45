import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The offline commands and the data root (issue 29, findings 7 and 30): a reading tool
/// changes nothing, and a writing one run as root keeps the data root's owner.
@Suite struct OfflineToolTests {
    /// Finding 7: `accountd plan --data-root x` on a folder with mode 1777 made it 0700 and
    /// created `accounts/` and `snapshots/` in it (a mistyped `--data-root /tmp` would strip
    /// `/tmp`'s sticky bit). It reads; it creates no folder and changes no mode.
    @Test func planChangesNothingInTheDataRoot() throws {
        let dir = TestDirectory()
        let shared = dir.sub("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        try Files.write("someone's\n", to: shared + "/file.txt")
        #expect(chmod(shared, 0o1777) == 0)
        let plan = try E2E.run(Binaries.accountd, ["plan", "--data-root", shared, "--schema", Repository.sampleBundle, "alice"])
        #expect(plan.status == 1, "\(plan.stdout) \(plan.stderr)")
        #expect(plan.stderr.contains("does not exist"), "\(plan.stderr)")
        #expect(Files.mode(shared) == 0o1777)
        #expect(Hostile.listing(shared) == ["file.txt"])

        // On a real data root it plans, and leaves every mode and name as it found them.
        let dataRoot = dir.sub("data")
        let older = try BundleFixture.write(at: dir.sub("v2"), steps: Array(E2E.sampleSteps.prefix(2)))
        try E2E.createOffline("alice", dataRoot: dataRoot, bundle: older)
        #expect(chmod(dataRoot, 0o750) == 0)
        try FileManager.default.removeItem(atPath: dataRoot + "/snapshots")
        func folders() throws -> [String] {
            try FileManager.default.subpathsOfDirectory(atPath: dataRoot).filter { path in
                var info = stat()
                return lstat(dataRoot + "/" + path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
            }.sorted()
        }
        let before = try folders()
        let alice = try #require(Files.bytes(dataRoot + "/accounts/alice.sqlite"))
        let planned = try E2E.run(Binaries.accountd, ["plan", "--data-root", dataRoot, "--schema", Repository.sampleBundle, "alice"])
        #expect(planned.status == 0, "\(planned.stderr)")
        #expect(planned.stdout.contains("0003_add_sex_and_app_data.sql"), "\(planned.stdout)")
        #expect(Files.mode(dataRoot) == 0o750)
        #expect(try folders() == before)
        #expect(Files.bytes(dataRoot + "/accounts/alice.sqlite") == alice)
    }

    /// Finding 30: `accountd migrate` and `accountd pull` run as root left root-owned
    /// `accountd.lock`, `accounts/` and `snapshots/`, and the daemon, running as its own
    /// user, then could not start ("cannot open .../accountd.lock: Permission denied").
    /// Everything they create goes to the data root's owner.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root (to run the tools as root for a data root owned by uid 65534) and setpriv"))
    func offlineToolsRunAsRootKeepTheDataRootsOwner() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        let dataRoot = dir.sub("data")
        try FileManager.default.createDirectory(atPath: dataRoot, withIntermediateDirectories: true)
        #expect(chown(dataRoot, 65534, 65534) == 0 && chmod(dataRoot, 0o700) == 0)
        let older = try BundleFixture.write(at: dir.sub("v2"), steps: Array(E2E.sampleSteps.prefix(2)))
        #expect(chmod(dir.sub("v2"), 0o755) == 0)

        // As root: create at version 2, then migrate to 3 (a snapshot), then pull another account.
        try E2E.createOffline("alice", dataRoot: dataRoot, bundle: older)
        let migrated = try E2E.run(Binaries.accountd, ["migrate", "--data-root", dataRoot, "--schema", Repository.sampleBundle, "alice"])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        try E2E.createOffline("carol", dataRoot: dir.sub("origin"), bundle: Repository.sampleBundle)
        // Litestream runs as the data root's owner (65534): the "replica" must be readable by it.
        for path in ["origin", "origin/accounts", "origin/accounts/carol.sqlite"] { #expect(chown(dir.sub(path), 65534, 65534) == 0) }
        let litestream = dir.sub("litestream")
        try DataRootLinkTests.fakeLitestream(at: litestream, "cp '\(dir.sub("origin/accounts/carol.sqlite"))' \"$out\"")
        let pulled = try E2E.run(
            Binaries.accountd, ["pull", "--data-root", dataRoot, "--replica", "file:///nowhere", "--litestream", litestream, "carol"])
        #expect(pulled.status == 0, "\(pulled.stderr)")

        var notKept: [String] = []
        for path in try FileManager.default.subpathsOfDirectory(atPath: dataRoot) {
            var info = stat()
            guard lstat(dataRoot + "/" + path, &info) == 0 else { continue }
            if info.st_uid != 65534 || info.st_gid != 65534 { notKept.append("\(path) \(info.st_uid):\(info.st_gid)") }
        }
        #expect(notKept == [], "not the data root's owner: \(notKept)")
        #expect(Hostile.listing(dataRoot + "/snapshots/alice").count == 1)

        // The data root's own user can now use everything: the daemon's user migrating offline.
        let asOwner = try E2E.run(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.accountd, "migrate", "--data-root", dataRoot, "--schema",
             Repository.sampleBundle, "--all"])
        #expect(asOwner.status == 0, "\(asOwner.stdout) \(asOwner.stderr)")
        #expect(asOwner.stdout.contains("alice: opened") && asOwner.stdout.contains("carol: opened"), "\(asOwner.stdout)")
    }
}
