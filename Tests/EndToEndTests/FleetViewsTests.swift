import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The fleet's three views of an account, `status ACCOUNT`, `list --details` and
/// `accountd_accounts_by_state`, tell the truth and agree (hostile34c H1-H4), against the real
/// binaries: a header rewritten with its times put back is read again; `verify` that finds
/// damage counts the account `corrupt`; a restore of a sound copy clears `corrupt`; a full
/// disk is `unavailable` in all three; an account being migrated counts `migrating`.
@Suite struct FleetViewsTests {
    /// Writes `bytes` at `offset` of the file at `path`, then puts its access and modification
    /// times back as they were, as `touch -r` (or `cp -p`, `rsync -a`) would.
    static func rewriteKeepingTimes(_ path: String, at offset: UInt64, _ bytes: [UInt8]) throws {
        var before = stat()
        #expect(lstat(path, &before) == 0)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seek(toFileOffset: offset)
        handle.write(Data(bytes))
        handle.closeFile()
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        var after = stat()
        #expect(lstat(path, &after) == 0)
        #expect(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec && after.st_size == before.st_size)
    }

    /// `account`'s entry in `list --details`: its version and state.
    static func listed(_ account: String, _ client: RawClient) throws -> (version: Int?, state: String?) {
        let replies = try client.call(#"{"method":"io.accountd.List","parameters":{"details":true},"more":true}"#)
        let entry = replies.first { $0.parameters["account"]?.stringValue == account }
        return (entry?.parameters["version"]?.intValue.map { Int($0) }, entry?.parameters["state"]?.stringValue)
    }

    @Test func aHeaderRewrittenWithItsTimesPutBackIsReadAgainEverywhere() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [FleetStopTests.item])
        let dataRoot = dir.sub("data")
        for name in ["k1", "k2"] { try E2E.createOffline(name, dataRoot: dataRoot, bundle: bundle) }
        let path = dataRoot + "/accounts/k1.sqlite"
        // Long enough after the files were made that what is read of them is remembered.
        Thread.sleep(forTimeInterval: 1.2)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let client = try daemon.client()
        #expect(try FleetFailureTests.byState(daemon)["current"] == 2)
        #expect(try client.callOne("status k1").parameters["version"] == 1)
        #expect(try Self.listed("k1", client).version == 1)

        // user_version (offset 60) set to 99, the times put back: every view reads 99.
        try Self.rewriteKeepingTimes(path, at: 60, [0, 0, 0, 99])
        let newer = try client.callOne("status k1")
        #expect(newer.parameters["version"] == 99, "\(newer.encoded())")
        #expect(try Self.listed("k1", client).version == 99)

        // Back to 1 with a foreign application_id (offset 68): corrupt in every view, at once.
        try Self.rewriteKeepingTimes(path, at: 60, [0, 0, 0, 1])
        try Self.rewriteKeepingTimes(path, at: 68, Array("XXXX".utf8))
        let corrupt = try client.callOne("status k1")
        #expect(corrupt.parameters["state"] == "corrupt", "\(corrupt.encoded())")
        #expect(try Self.listed("k1", client).state == "corrupt")
        #expect(try FleetFailureTests.byState(daemon)["corrupt"] == 1, "\(daemon.log.suffix(2000))")
        // A rollback reads the version the file has, not one remembered (99): nothing to restore.
        let rollback = try E2E.accountctl(["migrate", "k1", "--rollback-to", "1"], socket: daemon.socket)
        #expect(!rollback.stdout.contains("restored"), "\(rollback.stdout) \(rollback.stderr)")
        // (The test folder's random name may hold "99": look at what is said, not the paths.)
        let said = rollback.stdout.replacingOccurrences(of: dir.path, with: "DIR")
        #expect(!said.contains("99"), "\(rollback.stdout) \(rollback.stderr)")
    }

    /// An account with rows, a snapshot of it taken while sound, then damaged inside (its
    /// header intact): a shallow read still finds it `current`.
    static func damagedAccount(in dir: borrowing TestDirectory) throws -> (daemon: DaemonProcess, path: String) {
        let dataRoot = dir.sub("data")
        let bundle = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        try Hostile.makeItemAccount("k5", rows: 3000, dataRoot: dataRoot, bundle: bundle)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        let taken = try E2E.accountctl(["snapshot", "k5"], socket: daemon.socket)
        #expect(taken.status == 0, "\(taken.stderr)")
        let path = dataRoot + "/accounts/k5.sqlite"
        try AccountTruthTests.damageInside(path)
        #expect(try FleetFailureTests.byState(daemon)["corrupt"] == 0, "not looked at deeply yet")
        return (daemon, path)
    }

    @Test func aVerifyThatFindsDamageCountsTheAccountCorrupt() throws {
        let dir = TestDirectory()
        let (daemon, _) = try Self.damagedAccount(in: dir)
        defer { _ = E2E.stop(daemon) }
        let client = try daemon.client()
        let verify = try client.callOne("verify k5")
        #expect(verify.error == nil && verify.parameters["healthy"] == false, "\(verify.encoded())")
        let status = try client.callOne("status k5")
        #expect(status.parameters["state"] == "corrupt", "\(status.encoded())")
        #expect(status.parameters["problem"]?.stringValue?.contains("integrity") == true, "\(status.encoded())")
        #expect(try Self.listed("k5", client).state == "corrupt")
        #expect(try FleetFailureTests.byState(daemon)["corrupt"] == 1, "\(daemon.log.suffix(2000))")
    }

    @Test func aRestoreOfASoundCopyClearsCorrupt() throws {
        let dir = TestDirectory()
        let (daemon, path) = try Self.damagedAccount(in: dir)
        defer { _ = E2E.stop(daemon) }
        let client = try daemon.client()
        // Found by a Query: recorded corrupt, as an open that found it.
        let query = try client.callOne(#"{"method":"io.accountd.Query","parameters":{"sql":"SELECT sum(length(name)) FROM item","account":"k5"}}"#)
        #expect(query.error == .accountCorrupt, "\(query.encoded())")
        #expect(try FleetFailureTests.byState(daemon)["corrupt"] == 1)

        let restored = try E2E.accountctl(["restore", "k5"], socket: daemon.socket)
        #expect(restored.status == 0, "\(restored.stdout) \(restored.stderr)")
        #expect(Hostile.integrity(path) == "ok")
        let status = try client.callOne("status k5")
        #expect(status.parameters["state"] == "current", "\(status.encoded())")
        #expect(try Self.listed("k5", client).state == "current")
        let states = try FleetFailureTests.byState(daemon)
        #expect(states["corrupt"] == 0 && states["current"] == 1, "\(states)")
    }

    /// A Migrate that fails for a full disk: `unavailable` with the problem in `status`, in
    /// `list --details` and in the metrics, until an open succeeds.
    @Test func aFullDiskIsUnavailableInEveryView() throws {
        let dir = TestDirectory()
        let full = try FullDiskMigrate(dir)
        defer { full.end() }
        let (daemon, failed) = (full.daemon, full.failed)
        let client = try daemon.client()
        #expect(failed.status == 1, "\(failed.stdout) \(failed.stderr)")
        let status = try client.callOne("status g1")
        let listed = try Self.listed("g1", client)
        let states = try FleetFailureTests.byState(daemon)
        full.free()
        #expect(status.parameters["state"] == "unavailable", "\(status.encoded())")
        #expect(status.parameters["problem"]?.stringValue?.contains("No space left") == true, "\(status.encoded())")
        #expect(listed.state == "unavailable", "\(listed)")
        #expect(states["unavailable"] == 1 && states["outdated"] == 0, "\(states)")

        // Still so with the disk freed, until an open succeeds; then migrated, current everywhere.
        #expect(try client.callOne("status g1").parameters["state"] == "unavailable")
        #expect(try E2E.accountctl(["migrate", "g1"], socket: daemon.socket).status == 0)
        #expect(try client.callOne("status g1").parameters["state"] == "current")
        #expect(try Self.listed("g1", client).state == "current")
        #expect(try FleetFailureTests.byState(daemon)["current"] == 1)
    }

    /// hostile34d F2: an `unavailable` record stayed through successful `query` and `exec` on
    /// the account. A statement that used the file clears it (the file shows its own state).
    @Test func aStatementThatUsedTheFileClearsUnavailable() throws {
        let dir = TestDirectory()
        let full = try FullDiskMigrate(dir)
        defer { full.end() }
        let daemon = full.daemon
        #expect(full.failed.status == 1, "\(full.failed.stdout) \(full.failed.stderr)")
        full.free()
        let client = try daemon.client()
        #expect(try client.callOne("status g1").parameters["state"] == "unavailable")
        let read = try E2E.accountctl(["query", "--account", "g1", "--no-migrate", "SELECT 1"], socket: daemon.socket)
        #expect(read.status == 0, "\(read.stderr)")
        let status = try client.callOne("status g1")
        #expect(status.parameters["state"] == "outdated", "\(status.encoded())")
        #expect(try Self.listed("g1", client).state == "outdated")
        let states = try FleetFailureTests.byState(daemon)
        #expect(states["unavailable"] == 0 && states["outdated"] == 1, "\(states)")
    }

    /// hostile34d F2: a `migrate --create` that failed on a full disk recorded the missing
    /// account `unavailable`, and a sound file later copied (or imported) under that name
    /// showed `unavailable` everywhere. A create that left no file records nothing.
    @Test func aCreateThatFailedLeavesNothingAgainstALaterFile() throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        let tmpfs = try Hostile.Tmpfs.mounted(at: dataRoot, kibibytes: 2 * 1024)
        defer { tmpfs.unmount() }
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let filler = dataRoot + "/filler"
        Hostile.fillLeaving(0, folder: dataRoot, path: filler)
        let failed = try E2E.accountctl(["migrate", "--create", "p1"], socket: daemon.socket)
        try? FileManager.default.removeItem(atPath: filler)
        #expect(failed.status == 1, "\(failed.stdout) \(failed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("p1")))

        try E2E.createOffline("p1", dataRoot: dir.sub("elsewhere"), bundle: Repository.sampleBundle)
        try FileManager.default.copyItem(atPath: dir.sub("elsewhere") + "/accounts/p1.sqlite", toPath: daemon.accountPath("p1"))
        let status = try daemon.client().callOne("status p1")
        #expect(status.parameters["state"] == "current", "\(status.encoded())")
        #expect(try FleetFailureTests.byState(daemon)["unavailable"] == 0)
    }

    @Test func anAccountBeingMigratedCountsMigrating() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: [Hostile.itemV1, ErrorPathTests.spinningStep])
        try Hostile.makeItemAccount("bob", rows: 8000, dataRoot: dir.sub("data"), bundle: v1)
        try E2E.createOffline("done", dataRoot: dir.sub("data"), bundle: v2)
        let daemon = try E2E.daemon(directory: dir.path, bundle: v2)
        defer { _ = E2E.stop(daemon) }
        let (switcher, watcher) = try RestartTests.switchUntilMigrating(daemon)
        #expect(try Self.listed("bob", watcher).state == "migrating")
        let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(samples[#"accountd_accounts_by_state{state="migrating"}"#] == 1, "\(samples)")
        #expect(samples[#"accountd_accounts_by_state{state="current"}"#] == 1, "only 'done' is current: \(samples)")
        withExtendedLifetime(switcher) {}
    }
}
