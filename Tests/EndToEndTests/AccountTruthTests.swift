import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The smaller findings of hostile34b (N5), against the real binaries: Query and Execute on an
/// account damaged inside say `AccountCorrupt` and count it `corrupt`, as an open that found it
/// does; a full disk counts `unavailable` in the metrics as `Status` says; a Migrate naming an
/// account twice reports it once; `metrics --timeout` says the range it checks; `Status` of an
/// account that is migrating shows the version it is at.
@Suite struct AccountTruthTests {
    /// `account`'s file, written over near its end (its header intact), so that a full read
    /// meets damage that a shallow look at the file does not.
    static func damageInside(_ path: String) throws {
        let pages = Int(try E2E.sql(path, "PRAGMA page_count;"))!
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seek(toFileOffset: UInt64((pages - 2) * 4096))
        handle.write(Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }))
        handle.closeFile()
    }

    @Test func queryAndExecuteOnAnAccountDamagedInsideAnswerAccountCorrupt() throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        let bundle = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        try Hostile.makeItemAccount("k5", rows: 3000, dataRoot: dataRoot, bundle: bundle)
        try Self.damageInside(dataRoot + "/accounts/k5.sqlite")
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let client = try daemon.client()
        #expect(try FleetFailureTests.byState(daemon)["corrupt"] == 0, "not looked at deeply yet")

        let requests = [
            #"{"method":"io.accountd.Query","parameters":{"sql":"SELECT sum(length(name)) FROM item","account":"k5"}}"#,
            #"{"method":"io.accountd.Execute","parameters":{"statements":[{"sql":"UPDATE item SET n = n + 1"}],"account":"k5"}}"#,
        ]
        for request in requests {
            let reply = try client.callOne(request)
            #expect(reply.error == .accountCorrupt, "\(request): \(reply.encoded())")
            #expect(reply.parameters["account"] == "k5", "\(reply.encoded())")
            #expect(reply.message?.contains("malformed") == true, "\(reply.encoded())")
        }
        // Recorded as an open that found it: corrupt in Status and in the metrics.
        #expect(try client.callOne("status k5").parameters["state"] == "corrupt")
        #expect(try FleetFailureTests.byState(daemon)["corrupt"] == 1, "\(daemon.log.suffix(2000))")
        let lines = daemon.log.split(separator: "\n").filter { $0.contains("AccountCorrupt") }
        #expect(lines.count >= 2 && lines.allSatisfy { $0.contains("account=k5") }, "\(lines)")
    }

    /// A Migrate that fails for a full disk counts the account `unavailable`, as `Status`
    /// says ("the disk is full") and docs/OPERATIONS.md maps it (AccountdAccountUnreadable).
    @Test func aFullDiskCountsUnavailableAsStatusSays() throws {
        let dir = TestDirectory()
        let full = try FullDiskMigrate(dir)
        defer { full.end() }
        let failed = full.failed
        #expect(failed.status == 1, "\(failed.stdout) \(failed.stderr)")
        let states = try FleetFailureTests.byState(full.daemon)
        full.free()
        #expect(states["unavailable"] == 1 && states["failed"] == 0, "\(states) \(failed.stdout)")
    }

    @Test func aMigrateNamingAnAccountTwiceReportsItOnce() throws {
        let dir = TestDirectory()
        let old = try BundleFixture.truncate(Repository.sampleBundle, at: 2, into: dir.sub("old"))
        try E2E.createOffline("f1", dataRoot: dir.sub("data"), bundle: old)
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let reply = try daemon.client().callOne(#"{"method":"io.accountd.Migrate","parameters":{"accounts":["f1","f1"]}}"#)
        #expect(reply.error == nil, "\(reply.encoded())")
        #expect(reply.parameters["count"] == 1 && reply.parameters["migrated"] == 1, "\(reply.encoded())")
        let results = reply.parameters["results"]?.arrayValue ?? []
        #expect(results.count == 1, "\(reply.encoded())")
    }

    @Test func metricsTimeoutSaysTheRangeItChecks() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        for refused in ["0", "-1", "3601"] {
            let result = try E2E.accountctl(["metrics", "--textfile", dir.path + "/a.prom", "--timeout=\(refused)"], socket: daemon.socket)
            #expect(result.status != 0, "--timeout \(refused): \(result.stdout)")
            #expect(result.stderr.contains("more than 0 and at most 3600"), "--timeout \(refused): \(result.stderr)")
        }
        let accepted = try E2E.accountctl(["metrics", "--textfile", dir.path + "/a.prom", "--timeout", "3600"], socket: daemon.socket)
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(try String(contentsOfFile: dir.path + "/a.prom", encoding: .utf8).contains("accountd_up 1"))
    }

    /// While bob migrates, `Status bob` shows the version his file is at (1) and the one he
    /// migrates to (`target` 2), not `version: -`.
    @Test func statusOfAMigratingAccountShowsItsVersion() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: [Hostile.itemV1, ErrorPathTests.spinningStep])
        try Hostile.makeItemAccount("bob", rows: 8000, dataRoot: dir.sub("data"), bundle: v1)
        let daemon = try E2E.daemon(directory: dir.path, bundle: v2)
        defer { _ = E2E.stop(daemon) }
        let (switcher, watcher) = try RestartTests.switchUntilMigrating(daemon)
        let status = try watcher.callOne("status bob")
        #expect(status.parameters["state"] == "migrating", "\(status.encoded())")
        #expect(status.parameters["version"] == 1 && status.parameters["target"] == 2, "\(status.encoded())")
        withExtendedLifetime(switcher) {}
    }
}
