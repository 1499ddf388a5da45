import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Changing `replication.litestream.replica` as docs/REPLICATION.md says (edit the settings,
/// reload accountd, restart `accountd-litestream`) gets every account and `device.sqlite`
/// into the new replica (hostile33c #3): the unit's `ExecStartPre=accountd prepare-litestream`
/// resets Litestream's local state when the replica is another store than the one it was
/// built for, and Litestream then ships a full copy of everything.
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct ReplicaChangeTests {
    /// `accountd prepare-litestream` on `config`, as the unit's `ExecStartPre=` runs it.
    static func prepare(_ config: String) throws -> (status: Int32, stdout: String, stderr: String) {
        try E2E.run(Binaries.accountd, ["prepare-litestream", "--litestream-config", config])
    }

    /// Litestream as the `accountd-litestream` unit starts it: `prepare-litestream`, which must
    /// succeed, then `litestream replicate` on the same file. `config` is accountd's file with
    /// Litestream's level-0 retention cut to a second (and its level-1 compaction to a second):
    /// the early changes Litestream keeps locally then expire within seconds, as they do after
    /// five minutes with its defaults, which is what stranded the accounts in the report.
    static func startAsTheUnit(accountdConfig: String, config: String, log: String) throws -> (LitestreamProcess, String) {
        let text = try String(contentsOfFile: accountdConfig, encoding: .utf8)
        try Files.write("l0-retention: 1s\nl0-retention-check-interval: 1s\nlevels:\n  - interval: 1s\n" + text, to: config)
        let prepared = try prepare(config)
        try #require(prepared.status == 0, "prepare-litestream: \(prepared.stdout) \(prepared.stderr)")
        return (try LitestreamProcess(config: config, log: log, environment: SeaweedStore.credentials), prepared.stdout)
    }

    /// The daemon's settings file, with the replica and where Litestream's configuration goes.
    static func writeSettings(replica: String, config: String, to path: String) throws {
        var quoted = ""
        JSONValue.writeString(replica, to: &quoted)
        try Files.write("replication:\n  litestream:\n    replica: \(quoted)\n    config: \(config)\n", to: path)
    }

    /// The early level-0 change files Litestream keeps for `database` are gone (expired).
    static func firstChangeExpired(_ database: String) -> Bool {
        let folder = (database as NSString).deletingLastPathComponent + "/." + (database as NSString).lastPathComponent + "-litestream/ltx/0"
        return FileManager.default.fileExists(atPath: folder) && !FileManager.default.fileExists(atPath: folder + "/0000000000000001-0000000000000001.ltx")
    }

    @Test(.enabled(if: TestWeed.available, Comment(rawValue: TestWeed.skipReason)))
    func aChangedReplicaGetsEveryAccountAndDeviceSqlite() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let (old, new) = (store.replica("host-a"), store.replica("host-a2"))
        let (settings, written, config) = (dir.sub("accountd.yaml"), dir.sub("run/litestream.yml"), dir.sub("run/litestream-unit.yml"))
        try Self.writeSettings(replica: old, config: written, to: settings)
        let bundle = try ObjectStoreReplicationTests.bundle(dir)
        try FileManager.default.createDirectory(atPath: dir.sub("host"), withIntermediateDirectories: true)
        let daemon = try E2E.spawning {
            try DaemonProcess(
                directory: dir.sub("host"), bundle: bundle, arguments: ["--config", settings],
                environment: SeaweedStore.credentials.merging(["ACCOUNTD_REPLICATION_LITESTREAM_PROGRAM": TestLitestream.path!]) { $1 })
        }
        var (litestream, said) = try Self.startAsTheUnit(accountdConfig: written, config: config, log: dir.sub("litestream-1"))
        #expect(said.contains("recorded"), "\(said)")
        let client = try daemon.client()
        let device = daemon.dataRoot + "/device.sqlite"
        for account in ["alice", "bob"] { #expect(try client.callOne("switch \(account)").parameters["action"] == "created") }
        // Three changes of each file, each shipped on its own: the first can then expire.
        for (step, value) in ["lobby", "hall", "desk"].enumerated() {
            for (index, account) in ["alice", "bob"].enumerated() {
                try ObjectStoreReplicationTests.insert(client, account, id: index * 10 + step + 1, name: "\(account)-\(step + 1)")
            }
            let set = try client.callOne(E2E.request("Set", [("namespace", "switch"), ("key", "kiosk"), ("value", .string(value))]))
            try #require(set.error == nil, "\(set)")
            for database in [daemon.accountPath("alice"), daemon.accountPath("bob"), device] { try litestream.syncAndWait(database) }
        }
        // Litestream's first changes expire locally (in the report: after five minutes).
        let expired = waitUntil(timeout: 60, interval: 0.5) {
            [daemon.accountPath("alice"), daemon.accountPath("bob"), device].allSatisfy(Self.firstChangeExpired)
        }
        try #require(expired, "Litestream kept its first changes: \(litestream.log.suffix(2000))")

        // The documented procedure: change the setting, reload accountd, restart accountd-litestream.
        try Self.writeSettings(replica: new, config: written, to: settings)
        kill(daemon.process.processIdentifier, SIGHUP)
        let rewritten = waitUntil(timeout: 30) { ((try? String(contentsOfFile: written, encoding: .utf8)) ?? "").contains("host-a2") }
        try #require(rewritten, "the reload did not rewrite Litestream's configuration: \(daemon.log.suffix(2000))")
        #expect(waitUntil(timeout: 10) { daemon.log.contains("restart accountd-litestream") }, "\(daemon.log.suffix(2000))")
        // Between the reload and the restart Litestream still ships to the old replica: a
        // handoff now would record a final sync to the new one that never happened (hostile33e #1).
        #expect(try client.callOne("switch alice").error == nil)
        let early = try E2E.accountctl(["remove", "bob", "--handoff"], socket: daemon.socket)
        #expect(early.status != 0 && early.stderr.contains("restart it first"), "\(early.stdout) \(early.stderr)")
        #expect(FileManager.default.fileExists(atPath: daemon.accountPath("bob")), "bob was removed")
        // And the health check says so rather than show the new replica as caught up (hostile33f #5).
        let between = try E2E.accountctl(["replication"], socket: daemon.socket)
        #expect(between.status == 1 && between.stderr.contains("restart accountd-litestream") && between.stderr.contains("host-a"), "\(between)")
        let betweenJSON = try E2E.accountctl(["--json", "replication"], socket: daemon.socket)
        #expect(betweenJSON.status == 1 && (try? JSONParser.parse(betweenJSON.stdout))?["litestreamReplica"]?.stringValue != nil, "\(betweenJSON)")
        litestream.stop()
        (litestream, said) = try Self.startAsTheUnit(accountdConfig: written, config: config, log: dir.sub("litestream-2"))
        #expect(said.contains("removed Litestream's local state"), "\(said)")
        try ObjectStoreReplicationTests.insert(client, "alice", id: 100, name: "after-the-change")

        // Everything reaches the new replica: each file syncs, and a lost machine gets it all back.
        for database in [daemon.accountPath("alice"), daemon.accountPath("bob"), device] { try litestream.syncAndWait(database) }
        let status = try E2E.accountctl(["replication"], socket: daemon.socket)
        #expect(status.status == 0 && !status.stdout.contains("never uploaded"), "\(status.stdout) \(status.stderr)")
        for (account, rows) in [("alice", "alice-1,alice-2,alice-3,after-the-change"), ("bob", "bob-1,bob-2,bob-3")] {
            let pulled = try ObjectStoreReplicationTests.pullOffline(account, replica: new, dataRoot: dir.sub("lost/data"))
            #expect(pulled.status == 0, "\(account): \(pulled.stderr) \(litestream.log.suffix(3000))")
            if pulled.status == 0 {
                #expect(try E2E.sql(dir.sub("lost/data/accounts/\(account).sqlite"), "SELECT group_concat(name) FROM (SELECT name FROM item ORDER BY id);") == rows)
            }
        }
        let fresh = try ObjectStoreReplicationTests.host(dir, "fresh", replica: new, bundle: bundle, litestream: false).daemon
        let kiosk = try fresh.client().callOne(E2E.request("Get", [("namespace", "switch"), ("key", "kiosk")]))
        #expect(kiosk.parameters["value"] == "desk", "device.sqlite from the new replica: \(kiosk) \(fresh.log.suffix(2000))")
    }

    /// `prepare-litestream` records the store on a first start, keeps the state while the store
    /// is the same, refuses while Litestream runs (changing nothing), and otherwise removes every
    /// state folder, a planted link as a link (what it points to is left alone).
    @Test func prepareResetsOnlyForAnotherStoreAndOnlyWhileLitestreamIsStopped() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let config = dir.sub("run/litestream.yml")
        var daemon = try E2E.replicatingDaemon(
            directory: dir.sub("host"), bundle: bundle, replica: "file://" + dir.sub("replica-a"), runDirectory: dir.sub("run"))
        let first = try Self.prepare(config)
        #expect(first.status == 0 && first.stdout.contains("recorded"), "\(first)")
        let record = daemon.dataRoot + "/litestream-replica"
        #expect(try String(contentsOfFile: record, encoding: .utf8) == "file://" + dir.sub("replica-a") + "\n")
        // A configuration naming a data root that does not exist makes none (hostile33e #5).
        let elsewhere = dir.sub("elsewhere.yml")
        try Files.write(try String(contentsOfFile: config, encoding: .utf8).replacingOccurrences(of: daemon.dataRoot, with: dir.sub("nowhere/data")), to: elsewhere)
        let nowhere = try Self.prepare(elsewhere)
        #expect(nowhere.status == 1 && nowhere.stderr.contains("nothing was created"), "\(nowhere)")
        #expect(!FileManager.default.fileExists(atPath: dir.sub("nowhere")))
        let litestream = try LitestreamProcess(config: config, log: dir.sub("litestream"))
        #expect(try daemon.client().callOne("switch alice").parameters["action"] == "created")
        try litestream.syncAndWait(daemon.accountPath("alice"))
        let state = daemon.dataRoot + "/accounts/.alice.sqlite-litestream"
        #expect(FileManager.default.fileExists(atPath: state))
        let kept = try Self.prepare(config)
        #expect(kept.status == 0 && kept.stdout.contains("nothing to reset"), "\(kept)")

        // Another store: refused while Litestream answers on its socket, nothing removed.
        daemon.stop()
        daemon = try E2E.replicatingDaemon(
            directory: dir.sub("host"), bundle: bundle, replica: "file://" + dir.sub("replica-b"), runDirectory: dir.sub("run"))
        let running = try Self.prepare(config)
        #expect(running.status == 1 && running.stderr.contains("Litestream is running"), "\(running)")
        #expect(FileManager.default.fileExists(atPath: state))
        litestream.stop()

        // Stopped: every state folder goes; a link planted among them goes as a link.
        try FileManager.default.createDirectory(atPath: dir.sub("outside"), withIntermediateDirectories: true)
        try Files.write("keep\n", to: dir.sub("outside/file"))
        try FileManager.default.createSymbolicLink(atPath: daemon.dataRoot + "/accounts/.evil.sqlite-litestream", withDestinationPath: dir.sub("outside"))
        let reset = try Self.prepare(config)
        #expect(reset.status == 0 && reset.stdout.contains("removed Litestream's local state"), "\(reset)")
        for gone in [state, daemon.dataRoot + "/.device.sqlite-litestream", daemon.dataRoot + "/accounts/.evil.sqlite-litestream"] {
            #expect(FileSystemProbe.missing(gone), "\(gone)")
        }
        #expect(try String(contentsOfFile: dir.sub("outside/file"), encoding: .utf8) == "keep\n")
        #expect(FileManager.default.fileExists(atPath: daemon.accountPath("alice")))
        #expect(try String(contentsOfFile: record, encoding: .utf8) == "file://" + dir.sub("replica-b") + "\n")
        let again = try Self.prepare(config)
        #expect(again.status == 0 && again.stdout.contains("nothing to reset"), "\(again)")
    }
}

/// Whether nothing, not even a dangling link, is at a path.
enum FileSystemProbe {
    static func missing(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) != 0
    }
}
