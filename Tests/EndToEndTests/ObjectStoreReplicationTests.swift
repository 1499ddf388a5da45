import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Replication into a real object store: SeaweedFS's S3 gateway on loopback, with the real
/// Litestream 0.5 and the real daemon, the replica given as an operator writes it
/// (`s3://BUCKET/PATH?endpoint=...&forcePathStyle=true&region=...`) and the credentials in
/// the environment, as the units' `litestream.env` gives them. This machine sets
/// AWS_CA_BUNDLE, which the tests leave set: the daemon must clear it for every Litestream it runs.
@Suite(.enabled(if: TestWeed.available, Comment(rawValue: TestWeed.skipReason)))
struct ObjectStoreReplicationTests {
    /// A host under `dir/<name>` replicating to `replica`: its daemon and, unless told not
    /// to, the Litestream it configured.
    static func host(
        _ dir: borrowing TestDirectory, _ name: String, replica: String, bundle: String, litestream: Bool = true, environment: [String: String] = [:]
    ) throws -> (daemon: DaemonProcess, litestream: LitestreamProcess?) {
        let run = dir.sub("run-" + name)
        try FileManager.default.createDirectory(atPath: dir.sub(name), withIntermediateDirectories: true)
        let daemon = try E2E.daemon(
            directory: dir.sub(name), bundle: bundle,
            environment: E2E.s3Environment(replica: replica, runDirectory: run).merging(environment) { $1 })
        guard litestream else { return (daemon, nil) }
        let process = try LitestreamProcess(config: run + "/litestream.yml", log: dir.sub("litestream-" + name), environment: SeaweedStore.credentials)
        return (daemon, process)
    }

    static func bundle(_ dir: borrowing TestDirectory) throws -> String {
        try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
    }

    static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }

    static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }

    static func insert(_ client: RawClient, _ account: String, id: Int, name: String) throws {
        let reply = try client.callOne(DataCalls.execute(account, [("INSERT INTO item (id, name, n) VALUES (?, ?, ?)", [.int(Int64(id)), .string(name), .int(Int64(id))])]))
        try #require(reply.error == nil, "\(reply.parameters)")
    }

    /// `accountd pull` without a daemon, with the store's credentials (and AWS_CA_BUNDLE as this machine has it).
    static func pullOffline(_ account: String, replica: String, dataRoot: String) throws -> (status: Int32, stdout: String, stderr: String) {
        try E2E.run(
            Binaries.accountd, ["pull", "--replica", replica, "--data-root", dataRoot, "--litestream", TestLitestream.path!, account],
            environment: SeaweedStore.credentials)
    }

    /// Values written at known times come back exactly with `restore --at` each time; a time
    /// before the replica's history is refused with the earliest time, changing nothing; and
    /// Litestream goes on replicating the restored file: a later machine loss brings back the
    /// restored state and the changes made after it.
    @Test func restoreAtGivesEachTimesValuesAndReplicationGoesOn() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let replica = store.replica("host-a")
        let bundle = try Self.bundle(dir)
        let (daemon, litestream) = try Self.host(dir, "host-a", replica: replica, bundle: bundle)
        let client = try daemon.client()
        let beforeHistory = Date().addingTimeInterval(-60)
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        let words = ["one", "two", "three"]
        var times: [Date] = []
        for (index, word) in words.enumerated() {
            try ReplicationTests.set(client, "word", .string(word), account: "alice")
            try Self.insert(client, "alice", id: index + 1, name: word)
            try litestream!.syncAndWait(daemon.accountPath("alice"))
            Thread.sleep(forTimeInterval: 1.2)
            times.append(Date())
            Thread.sleep(forTimeInterval: 1.2)
        }

        // Before the replica's history: refused, naming the earliest time; nothing changes.
        let snapshotsBefore = try client.callOne("snapshots alice").parameters["snapshots"]?.arrayValue?.count
        let refused = try E2E.accountctl(["restore", "alice", "--at", Self.rfc3339(beforeHistory)], socket: daemon.socket)
        #expect(refused.status == 1 && refused.stderr.contains("SnapshotNotFound") && refused.stderr.contains("before its history"), "\(refused.stderr)")
        #expect(refused.stderr.contains("Restore at 20"), "the earliest time is named: \(refused.stderr)")
        #expect(try ReplicationTests.get(client, "word", account: "alice") == "three")
        #expect(try E2E.sql(daemon.accountPath("alice"), "SELECT group_concat(name) FROM item;") == "one,two,three")
        #expect(try client.callOne("snapshots alice").parameters["snapshots"]?.arrayValue?.count == snapshotsBefore)

        // Each time, in any order, gives exactly that time's values, the active account reopened.
        for index in [1, 0, 2, 0] {
            let asked = times[index]
            let restored = try E2E.accountctl(["--json", "restore", "alice", "--at", Self.rfc3339(asked)], socket: daemon.socket)
            try #require(restored.status == 0, "\(restored.stdout) \(restored.stderr) \(daemon.log.suffix(2000))")
            let reply = try JSONParser.parse(restored.stdout)
            #expect(reply["restoredFrom"] == "replica", "\(restored.stdout)")
            let at = reply["at"]?.stringValue.flatMap(Self.date)
            #expect(at != nil && at! <= asked && at! > asked.addingTimeInterval(-5), "asked \(Self.rfc3339(asked)), got \(restored.stdout)")
            #expect(reply["saved"]?["snapshot"]?.stringValue?.hasSuffix("before-restore") == true, "\(restored.stdout)")
            #expect(reply["reopened"] == "opened", "\(restored.stdout)")
            #expect(try ReplicationTests.get(client, "word", account: "alice") == .string(words[index]))
            #expect(try E2E.sql(daemon.accountPath("alice"), "SELECT group_concat(name) FROM item;") == words[...index].joined(separator: ","))
        }

        // Litestream replicates the restored file: a change after the restore, then the machine is lost.
        try ReplicationTests.set(client, "after", "restore", account: "alice")
        try litestream!.syncAndWait(daemon.accountPath("alice"))
        daemon.stop(signal: SIGKILL)
        litestream!.stop(signal: SIGKILL)
        try FileManager.default.removeItem(atPath: daemon.dataRoot)
        let rootB = dir.sub("host-b/data")
        let pulled = try Self.pullOffline("alice", replica: replica, dataRoot: rootB)
        try #require(pulled.status == 0, "\(pulled.stdout) \(pulled.stderr)")
        let (hostB, _) = try Self.host(dir, "host-b", replica: replica, bundle: bundle, litestream: false)
        let clientB = try hostB.client()
        #expect(try clientB.callOne("switch alice").parameters["action"] == "opened")
        #expect(try ReplicationTests.get(clientB, "word", account: "alice") == "one")
        #expect(try ReplicationTests.get(clientB, "after", account: "alice") == "restore")
        #expect(try E2E.sql(hostB.accountPath("alice"), "SELECT group_concat(name) FROM item;") == "one")
    }

    /// On a fresh data root replicating to the same place, a switch to an account the replica
    /// holds is refused (naming `accountctl pull`), never made empty; with `onCreate: pull` it
    /// is pulled instead. `device.sqlite` comes back too.
    @Test func aSwitchOnAFreshRootNeverShadowsTheReplica() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let replica = store.replica("fleet")
        let bundle = try Self.bundle(dir)
        let (hostA, litestream) = try Self.host(dir, "host-a", replica: replica, bundle: bundle)
        let client = try hostA.client()
        #expect(try client.callOne("switch u0300").parameters["action"] == "created")
        try Self.insert(client, "u0300", id: 1, name: "kept")
        try ReplicationTests.set(client, "word", "kept", account: "u0300")
        let device = try client.callOne(E2E.request("Set", [("namespace", "switch"), ("key", "kiosk"), ("value", "lobby")]))
        try #require(device.error == nil, "\(device)")
        try litestream!.syncAndWait(hostA.accountPath("u0300"))
        try litestream!.syncAndWait(hostA.dataRoot + "/device.sqlite")
        #expect(hostA.stop() == 0)
        litestream!.stop()

        // Host B: refused, nothing made; other names are created as usual; pull, then switch.
        let (hostB, _) = try Self.host(dir, "host-b", replica: replica, bundle: bundle, litestream: false)
        let clientB = try hostB.client()
        let kiosk = try clientB.callOne(E2E.request("Get", [("namespace", "switch"), ("key", "kiosk")]))
        #expect(kiosk.parameters["value"] == "lobby", "device.sqlite is pulled at start: \(kiosk) \(hostB.log.suffix(2000))")
        let refused = try E2E.accountctl(["switch", "u0300"], socket: hostB.socket)
        #expect(refused.status == 1 && refused.stderr.contains("AccountExists") && refused.stderr.contains("accountctl pull u0300"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: hostB.accountPath("u0300")))
        #expect(try clientB.callOne("switch u0301").parameters["action"] == "created")
        let pulled = try E2E.accountctl(["pull", "u0300"], socket: hostB.socket)
        #expect(pulled.status == 0, "\(pulled.stdout) \(pulled.stderr)")
        #expect(try clientB.callOne("switch u0300").parameters["action"] == "opened")
        #expect(try ReplicationTests.get(clientB, "word", account: "u0300") == "kept")

        // Host C, set to pull on create: the switch brings the replica's copy.
        let (hostC, _) = try Self.host(
            dir, "host-c", replica: replica, bundle: bundle, litestream: false, environment: ["ACCOUNTD_REPLICATION_LITESTREAM_ON_CREATE": "pull"])
        let clientC = try hostC.client()
        let switched = try clientC.callOne("switch u0300")
        #expect(switched.error == nil, "\(switched) \(hostC.log.suffix(2000))")
        #expect(try ReplicationTests.get(clientC, "word", account: "u0300") == "kept")
        #expect(try E2E.sql(hostC.accountPath("u0300"), "SELECT group_concat(name) FROM item;") == "kept")

        // Host D cannot ask the replica (a wrong secret): nothing is created, and it says why.
        let (hostD, _) = try Self.host(
            dir, "host-d", replica: replica, bundle: bundle, litestream: false, environment: ["AWS_SECRET_ACCESS_KEY": "not-the-secret"])
        let unasked = try E2E.accountctl(["switch", "u0302"], socket: hostD.socket)
        #expect(unasked.status == 1 && unasked.stderr.contains("could not be asked"), "\(unasked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: hostD.accountPath("u0302")))

        // The secret is in no log and no reply: it reached Litestream through the environment only.
        for host in [hostA, hostB, hostC, hostD] { #expect(!host.log.contains(SeaweedStore.secretKey)) }
        #expect(!(try String(contentsOfFile: dir.sub("run-host-b/litestream.yml"), encoding: .utf8)).contains(SeaweedStore.secretKey))
        #expect(!refused.stderr.contains(SeaweedStore.secretKey) && !pulled.stdout.contains(SeaweedStore.secretKey))
    }

    /// A store that stops taking uploads (frozen with SIGSTOP) shows in `accountctl
    /// replication` and the metrics within 10 s of a write: the account is `behind`, the
    /// worst lag grows; once the store answers again, it catches up.
    @Test func aStoreThatStopsTakingUploadsShowsWithinTenSeconds() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let (daemon, litestream) = try Self.host(dir, "host-a", replica: store.replica("host-a"), bundle: try Self.bundle(dir))
        let client = try daemon.client()
        for account in ["alice", "bob"] {
            #expect(try client.callOne("switch \(account)").parameters["action"] == "created")
            try litestream!.syncAndWait(daemon.accountPath(account))
        }
        let healthy = try JSONParser.parse(try E2E.accountctl(["--json", "replication"], socket: daemon.socket).stdout)
        #expect(healthy["behind"] == 0 && (healthy["worstSecondsBehind"].flatMap(Self.number) ?? 99) < 5, "\(healthy)")

        store.freeze()
        defer { store.thaw() }
        try ReplicationTests.set(client, "word", "stuck", account: "alice")
        let wrote = Date()
        var report = ""
        let shown = waitUntil(timeout: 15, interval: 0.25) {
            guard let run = try? E2E.accountctl(["--json", "replication"], socket: daemon.socket) else { return false }
            report = run.stdout
            let parsed = try? JSONParser.parse(run.stdout)
            let alice = parsed?["accounts"]?.arrayValue?.first { $0["account"] == "alice" }
            return alice?["status"] == "behind"
        }
        let after = Date().timeIntervalSince(wrote)
        #expect(shown && after <= 10, "after \(after) s: \(report)")
        let parsed = try JSONParser.parse(report)
        #expect((parsed["behind"]?.intValue ?? 0) >= 1 && (parsed["worstSecondsBehind"].flatMap(Self.number) ?? 0) >= 5, "\(report)")
        let table = try E2E.accountctl(["replication"], socket: daemon.socket)
        #expect(table.status == 1 && table.stdout.contains("behind") && table.stderr.contains("have not reached the replica"), "\(table.stdout) \(table.stderr)")
        let metrics = try client.callOne("metrics").parameters["text"]?.stringValue ?? ""
        func gauge(_ prefix: String) -> Double? {
            metrics.split(separator: "\n").first { $0.hasPrefix(prefix + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        #expect((gauge("accountd_replication_accounts{state=\"behind\"}") ?? 0) >= 1, "\(metrics)")
        #expect((gauge("accountd_replication_lag_seconds") ?? 0) >= 5, "\(metrics)")

        store.thaw()
        let recovered = waitUntil(timeout: 60, interval: 0.5) {
            let parsed = try? JSONParser.parse((try? E2E.accountctl(["--json", "replication"], socket: daemon.socket))?.stdout ?? "")
            return parsed?["behind"] == 0
        }
        #expect(recovered, "\(litestream!.log.suffix(2000))")
    }
}

/// `accountctl restore ACCOUNT --at TIME` without an object store: what it accepts, and what
/// a daemon without replication answers.
@Suite struct RestoreAtArgumentsTests {
    @Test func aTimeIsRFC3339OrHowLongAgoAndNeedsReplication() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        #expect(try daemon.client().callOne("switch alice").error == nil)
        for time in ["10m", "2h", "90s", "2026-01-31T09:30:00Z"] {
            let run = try E2E.accountctl(["restore", "alice", "--at", time], socket: daemon.socket)
            #expect(run.status == 1 && run.stderr.contains("without replication"), "\(time): \(run.stderr)")
        }
        for bad in ["yesterday", "10", "2026-01-31"] {
            let run = try E2E.accountctl(["restore", "alice", "--at", bad], socket: daemon.socket)
            #expect(run.status == 2 && run.stderr.contains("--at"), "\(bad): \(run.stderr)")
        }
        let both = try E2E.accountctl(["restore", "alice", "some-snapshot", "--at", "10m"], socket: daemon.socket)
        #expect(both.status == 2, "\(both.stderr)")
        #expect(try daemon.client().callOne("snapshots alice").parameters["snapshots"]?.arrayValue?.isEmpty == true, "nothing was restored or saved")
    }
}
