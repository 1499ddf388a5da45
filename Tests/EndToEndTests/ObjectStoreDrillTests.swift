import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The machine-loss drill against a real object store (SeaweedFS's S3 gateway), and the
/// measurements docs/PERFORMANCE.md quotes.
@Suite(.enabled(if: TestWeed.available, Comment(rawValue: TestWeed.skipReason)))
struct ObjectStoreDrillTests {
    /// Switch, a 100,000-row rebuild, Sets and Executes from 32 clients, a snapshot restore
    /// and a remove, all replicated into S3; the data root deleted; every account pulled back
    /// on a fresh root (through the daemon, which runs `litestream restore` with the
    /// credentials of its environment) at its version, with everything Litestream had synced.
    @Test func aLostMachineComesBackFromTheObjectStore() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let replica = store.replica("host-a")
        let bundle = try ObjectStoreReplicationTests.bundle(dir)
        let (daemon, process) = try ObjectStoreReplicationTests.host(dir, "host-a", replica: replica, bundle: bundle)
        let litestream = try #require(process)
        let written = try String(contentsOfFile: dir.sub("run-host-a/litestream.yml"), encoding: .utf8)
        #expect(written.contains("url: \"\(replica)\""), "the S3 URL reaches Litestream as it is: \(written)")
        let client = try daemon.client()

        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        try E2E.sql(daemon.accountPath("alice"), E2E.insertRows("item", count: ReplicationTests.rows))
        let sum = try E2E.sql(daemon.accountPath("alice"), "SELECT sum(n) FROM item;")
        #expect(try client.callOne("switch bob").parameters["action"] == "created")
        try litestream.syncAndWait(daemon.accountPath("alice"))
        try ReplicationTests.upgrade(daemon, bundle: bundle)
        let migrated = try client.callOne("migrate alice")
        #expect(migrated.parameters["migrated"] == 1, "\(migrated.parameters) \(daemon.log.suffix(3000))")

        // bob: Sets and Executes from 32 clients at once.
        let failures = E2E.Locked<[String]>([])
        let socket = daemon.socket
        DispatchQueue.concurrentPerform(iterations: 32) { index in
            do {
                let own = try RawClient(socket: socket)
                for step in 0..<3 {
                    try ReplicationTests.set(own, "k\(index)-\(step)", .int(Int64(index * 100 + step)), account: "bob")
                    try ObjectStoreReplicationTests.insert(own, "bob", id: index * 10 + step, name: "c\(index)")
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.current.isEmpty, "\(failures.current)")

        // carol: a snapshot, a change, a restore of the snapshot; dave: a change, then removed.
        #expect(try client.callOne("switch carol").parameters["action"] == "created")
        try ReplicationTests.set(client, "color", "red", account: "carol")
        #expect(try client.callOne("snapshot carol").error == nil)
        try ReplicationTests.set(client, "color", "blue", account: "carol")
        #expect(try client.callOne("restore carol").error == nil)
        #expect(try client.callOne("switch dave").parameters["action"] == "created")
        try ReplicationTests.set(client, "last", "words", account: "dave")
        _ = try client.callOne("switch bob")
        #expect(litestream.waitUntilReplicating(daemon.accountPath("dave")), "\(litestream.log.suffix(3000))")
        let removed = try client.callOne("remove dave")
        #expect(removed.error == nil, "\(removed.parameters)")

        for account in ["alice", "bob", "carol"] { try litestream.syncAndWait(daemon.accountPath(account)) }
        daemon.stop(signal: SIGKILL)
        litestream.stop(signal: SIGKILL)
        try FileManager.default.removeItem(atPath: daemon.dataRoot)

        let (hostB, _) = try ObjectStoreReplicationTests.host(dir, "host-b", replica: replica, bundle: bundle, litestream: false)
        for account in ["alice", "bob", "carol", "dave"] {
            let pulled = try E2E.accountctl(["pull", account], socket: hostB.socket)
            #expect(pulled.status == 0, "\(account): \(pulled.stdout) \(pulled.stderr) \(hostB.log.suffix(2000))")
        }
        for account in ["alice", "bob", "carol", "dave"] {
            #expect(try E2E.userVersion(hostB.accountPath(account)) == 2, "\(account)")
            #expect(try E2E.sql(hostB.accountPath(account), "PRAGMA integrity_check;") == "ok", "\(account)")
        }
        #expect(try E2E.sql(hostB.accountPath("alice"), "SELECT count(*), sum(n), sum(doubled) = 2 * sum(n) FROM item;") == "\(ReplicationTests.rows)|\(sum)|1")
        #expect(try E2E.sql(hostB.accountPath("bob"), "SELECT count(*) FROM item;") == "\(32 * 3)")
        let clientB = try hostB.client()
        let keys = try clientB.callOne(E2E.request("Keys", [("namespace", "user"), ("account", "bob")])).parameters["keys"]?.arrayValue ?? []
        #expect(keys.count == 32 * 3)
        #expect(try ReplicationTests.get(clientB, "color", account: "carol") == "red")
        #expect(try ReplicationTests.get(clientB, "last", account: "dave") == "words")
    }

    /// Replication lag to the object store at the default sync interval, and the time to
    /// restore a 100 MB account to a point in time. Run with ACCOUNTD_TEST_MEASURE=1; prints
    /// the numbers docs/PERFORMANCE.md quotes.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["ACCOUNTD_TEST_MEASURE"] != nil))
    func measureLagAndRestoreTime() throws {
        let dir = TestDirectory()
        let host = try ReplicatingHost(dir, prefix: "measure")
        let (replica, daemon, litestream, client) = (host.replica, host.daemon, host.litestream, host.client)
        try litestream.syncAndWait(daemon.accountPath("alice"))
        let source = replica.replacingOccurrences(of: "?", with: "/alice.sqlite?")
        func newestTXID() -> UInt64 {
            guard let run = try? E2E.run("/usr/bin/env", ["-u", "AWS_CA_BUNDLE", TestLitestream.path!, "ltx", "-json", source], environment: SeaweedStore.credentials),
                let list = (try? JSONParser.parse(run.stdout))?.arrayValue
            else { return 0 }
            return list.compactMap { $0["max_txid"]?.stringValue.flatMap { UInt64($0, radix: 16) } }.max() ?? 0
        }
        var lags: [Double] = []
        for index in 0..<20 {
            let before = newestTXID()
            try ReplicationTests.set(client, "k\(index)", .int(Int64(index)), account: "alice")
            let acknowledged = Date()
            _ = waitUntil(timeout: 30, interval: 0.02) { newestTXID() > before }
            lags.append(Date().timeIntervalSince(acknowledged))
            Thread.sleep(forTimeInterval: Double(index % 5) * 0.13)
        }
        lags.sort()
        print(String(format: "object-store lag: median %.2f s, p95 %.2f s, worst %.2f s", lags[lags.count / 2], lags[lags.count * 95 / 100], lags.last!))

        // A 100 MB account: 100,000 rows of 1,000 bytes.
        try E2E.sql(
            daemon.accountPath("alice"),
            "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 100000) INSERT INTO item (id, name, n) SELECT i, hex(randomblob(500)), i FROM s;")
        let syncStarted = Date()
        try litestream.syncAndWait(daemon.accountPath("alice"))
        let upload = Date().timeIntervalSince(syncStarted)
        Thread.sleep(forTimeInterval: 1.5)
        let at = ObjectStoreReplicationTests.rfc3339(Date())
        let size = (try FileManager.default.attributesOfItem(atPath: daemon.accountPath("alice")))[.size] as? Int ?? 0
        let restoreStarted = Date()
        let restored = try E2E.accountctl(["--json", "restore", "alice", "--at", at], socket: daemon.socket)
        let restoreTime = Date().timeIntervalSince(restoreStarted)
        #expect(restored.status == 0, "\(restored.stderr)")
        print(String(format: "100 MB account (%d bytes): first upload %.1f s, restore --at %.1f s", size, upload, restoreTime))
    }
}
