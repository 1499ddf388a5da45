import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `accountd migrate --create` (offline, no daemon) on a data root whose daemon replicates:
/// it asks the replica first, as a switch does, and never creates an empty account that
/// Litestream would make the replica's newest state (hostile33b N1).
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct OfflineCreateAsksReplicaTests {
    /// Host A replicates alice (a value in it) to a `file://` replica and is lost; on a fresh
    /// data root with the same replication settings (read from the daemon's environment),
    /// `migrate --create alice` is refused with nothing created, `--create` of an account the
    /// replica does not hold still creates it, `onCreate: pull` pulls alice with her value,
    /// and a replica that cannot be asked refuses.
    @Test func offlineCreateRefusesWhatTheReplicaHolds() throws {
        let dir = try TestDirectory()
        let (replica, bundle, daemon, litestream) = try ReplicationTests.replicatingHost(dir)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        try ReplicationTests.set(client, "color", "green", account: "alice")
        try litestream.syncAndWait(daemon.accountPath("alice"))
        daemon.stop(signal: SIGKILL)
        litestream.stop(signal: SIGKILL)

        let rootB = dir.sub("host-b/data")
        try FileManager.default.createDirectory(atPath: rootB, withIntermediateDirectories: true)
        let env = E2E.replicationEnvironment(replica: replica, runDirectory: dir.sub("run-b"))
        let refused = try E2E.run(Binaries.accountd, ["migrate", "--data-root", rootB, "--schema", bundle, "--create", "alice"], environment: env)
        #expect(refused.status == 1 && refused.stderr.contains("holds it") && refused.stderr.contains("accountd pull"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: rootB + "/accounts/alice.sqlite"))

        let fresh = try E2E.run(Binaries.accountd, ["migrate", "--data-root", rootB, "--schema", bundle, "--create", "newbie"], environment: env)
        #expect(fresh.status == 0 && fresh.stdout.contains("newbie: created"), "\(fresh)")

        var pullEnv = env
        pullEnv["ACCOUNTD_REPLICATION_LITESTREAM_ON_CREATE"] = "pull"
        let pulled = try E2E.run(Binaries.accountd, ["migrate", "--data-root", rootB, "--schema", bundle, "--create", "alice"], environment: pullEnv)
        #expect(pulled.status == 0 && pulled.stdout.contains("pulled from the replica"), "\(pulled)")
        #expect(try E2E.sql(rootB + "/accounts/alice.sqlite", "SELECT count(*) FROM sqlite_schema WHERE name = 'item';") == "1")

        // A replica that cannot be asked: nothing is created.
        let failing = dir.sub("failing-litestream")
        try ReplicationHostileTests.writeFailingLitestream(at: failing)
        var brokenEnv = env
        brokenEnv["ACCOUNTD_REPLICATION_LITESTREAM_PROGRAM"] = failing
        let unasked = try E2E.run(Binaries.accountd, ["migrate", "--data-root", rootB, "--schema", bundle, "--create", "carol"], environment: brokenEnv)
        #expect(unasked.status == 1 && unasked.stderr.contains("could not be asked"), "\(unasked)")
        #expect(!FileManager.default.fileExists(atPath: rootB + "/accounts/carol.sqlite"))
    }
}
