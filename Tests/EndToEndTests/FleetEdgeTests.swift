import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The smaller findings of issue 34's review, against the real binaries: a failure before a
/// migration's first step names the account in its log line (finding 9); a canary naming an
/// account that does not exist is refused before anything is migrated; `--rollback-to -1`
/// says what is wrong; Litestream's bytes count only with replication on; a before-migrate
/// snapshot counts in `accountd_snapshots_total` when its migration then failed.
@Suite struct FleetEdgeTests {
    @Test func aFailureBeforeTheFirstStepNamesTheAccount() throws {
        let dir = TestDirectory()
        let full = try FullDiskMigrate(dir)
        defer { full.end() }
        let (daemon, failed) = (full.daemon, full.failed)
        full.free()
        #expect(failed.status == 1, "\(failed.stdout) \(failed.stderr)")
        let lines = daemon.log.split(separator: "\n").filter { $0.contains("operation=Migrate") && $0.contains("failed") }
        #expect(!lines.isEmpty, "\(daemon.log.suffix(3000))")
        #expect(lines.allSatisfy { $0.contains("account=g1") }, "\(lines)")
        #expect(try E2E.userVersion(full.dataRoot + "/accounts/g1.sqlite") == 2)
    }

    @Test func aMissingCanaryIsRefusedBeforeAnythingIsMigrated() throws {
        let dir = TestDirectory()
        let old = try BundleFixture.truncate(Repository.sampleBundle, at: 2, into: dir.sub("old"))
        for name in ["c1", "c2"] { try E2E.createOffline(name, dataRoot: dir.sub("data"), bundle: old) }
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let refused = try E2E.accountctl(["migrate", "--all", "--canary-accounts", "c1,nosuch"], socket: daemon.socket)
        #expect(refused.status != 0 && refused.stderr.contains("nosuch") && refused.stderr.contains("nothing was migrated"), "\(refused.stderr)")
        for name in ["c1", "c2"] { #expect(try E2E.userVersion(daemon.accountPath(name)) == 2, "\(name) untouched") }

        let negative = try E2E.accountctl(["migrate", "--all", "--rollback-to", "-1"], socket: daemon.socket)
        #expect(negative.status == 2 && negative.stderr.contains("--rollback-to must be a version, 0 or more"), "\(negative.stderr)")
    }

    @Test func litestreamBytesCountOnlyWithReplicationOn() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        #expect(try daemon.client().callOne("switch l1").error == nil)
        // What an earlier replication left beside the file.
        let leftover = dir.sub("data") + "/accounts/.l1.sqlite-litestream"
        try FileManager.default.createDirectory(atPath: leftover, withIntermediateDirectories: true)
        try Files.write(String(repeating: "x", count: 100_000), to: leftover + "/generation")
        let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(samples[#"accountd_disk_bytes{kind="litestream"}"#] == 0, "\(samples.filter { $0.key.contains("disk") })")
    }

    @Test func aFailedMigrationsSnapshotIsCounted() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: ["CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER);"])
        let v2 = try BundleFixture.write(
            at: dir.sub("v2"), steps: ["CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER);", "CREATE UNIQUE INDEX item_code ON item(code);"])
        try E2E.createOffline("s1", dataRoot: dir.sub("data"), bundle: v1)
        try E2E.sqlite3(dir.sub("data") + "/accounts/s1.sqlite", "INSERT INTO item VALUES (1, 7), (2, 7);")
        let daemon = try E2E.daemon(directory: dir.path, bundle: v2)
        defer { _ = E2E.stop(daemon) }
        #expect(try E2E.accountctl(["migrate", "s1"], socket: daemon.socket).status == 1)
        let snapshots = try FileManager.default.contentsOfDirectory(atPath: dir.sub("data") + "/snapshots/s1").filter { $0.hasSuffix(".sqlite") }
        #expect(snapshots.count == 1, "\(snapshots)")
        let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(samples[#"accountd_snapshots_total{reason="migrate"}"#] == 1, "\(samples.filter { $0.key.contains("snapshot") })")
    }
}
