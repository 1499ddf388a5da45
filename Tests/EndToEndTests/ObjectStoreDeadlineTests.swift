import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Litestream runs with a deadline (`replication.litestream.commandTimeoutSeconds`), against a
/// real object store that stops answering (SeaweedFS frozen with SIGSTOP) or an endpoint that
/// refuses connections: Litestream's S3 client retries those without end, and used to hold
/// the account (and the daemon's shutdown) for as long (issue 33's hostile review, F1 and F6).
@Suite(.enabled(if: TestWeed.available, Comment(rawValue: TestWeed.skipReason)))
struct ObjectStoreDeadlineTests {
    /// The deadline the tests give Litestream's runs.
    static let deadline = ["ACCOUNTD_REPLICATION_LITESTREAM_COMMAND_TIMEOUT_SECONDS": "3"]

    /// `accountctl ARGUMENTS` against `socket`, cut at 60 s (so that a hang fails the test
    /// instead of stopping it), and how long it took.
    static func accountctl(_ arguments: [String], socket: String) throws -> (status: Int32, stdout: String, stderr: String, seconds: Double) {
        let started = Date()
        let run = try E2E.run("/usr/bin/timeout", ["60", Binaries.accountctl, "--socket", socket] + arguments)
        return (run.status, run.stdout, run.stderr, Date().timeIntervalSince(started))
    }

    /// The pids of the `litestream` processes whose parent is `pid`.
    static func litestreamChildren(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> Int32? in
            guard let child = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { return nil }
            let name = stat[stat.index(after: open)..<close]
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard name == "litestream", fields.count > 2, Int32(fields[1]) == pid, fields[0] != "Z" else { return nil }
            return child
        }
    }

    /// A switch that would create an account asks the replica first; with the store frozen it
    /// is refused within the deadline, saying why, and nothing is created; the account is not
    /// left held. Once the store answers, the same switch creates it.
    @Test func aSwitchThatCreatesIsRefusedWithinTheDeadlineWhileTheStoreIsFrozen() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let (daemon, _) = try ObjectStoreReplicationTests.host(
            dir, "host-c", replica: store.replica("host-a"), bundle: try ObjectStoreReplicationTests.bundle(dir), litestream: false,
            environment: Self.deadline)
        store.freeze()
        defer { store.thaw() }
        for attempt in 1...2 {
            let refused = try Self.accountctl(["switch", "zz1"], socket: daemon.socket)
            #expect(refused.status == 1, "attempt \(attempt): \(refused.status) \(refused.stdout) \(refused.stderr)")
            #expect(refused.stderr.contains("could not be asked") && refused.stderr.contains("did not finish within 3 s"), "\(refused.stderr)")
            #expect(refused.seconds < 10, "answered after \(refused.seconds) s")
            #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("zz1")))
        }
        #expect(waitUntil(timeout: 5) { Self.litestreamChildren(of: daemon.process.processIdentifier).isEmpty }, "litestream was left running")

        store.thaw()
        let created = try Self.accountctl(["--json", "switch", "zz1"], socket: daemon.socket)
        #expect(created.status == 0 && created.stdout.contains("created"), "\(created.stdout) \(created.stderr) \(daemon.log.suffix(2000))")
        #expect(FileManager.default.fileExists(atPath: daemon.accountPath("zz1")))
    }

    /// A pull from an endpoint that refuses connections fails within the deadline, leaving
    /// nothing behind, and the account can be asked for again at once.
    @Test func aPullFromARefusingEndpointFailsWithinTheDeadline() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let (daemon, _) = try ObjectStoreReplicationTests.host(
            dir, "host-b", replica: store.replica("host-b"), bundle: try ObjectStoreReplicationTests.bundle(dir), litestream: false,
            environment: Self.deadline)
        let refusing = "s3://accountd/host-a?endpoint=http://127.0.0.1:1&forcePathStyle=true&region=us-east-1"
        let pulled = try Self.accountctl(["pull", "zed", "--replica", refusing], socket: daemon.socket)
        #expect(pulled.status == 1 && pulled.stderr.contains("did not finish within 3 s"), "\(pulled.status) \(pulled.stderr)")
        #expect(pulled.seconds < 10, "answered after \(pulled.seconds) s")
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("zed")))
        #expect(Hostile.listing(daemon.dataRoot + "/accounts").filter { $0.contains("zed") }.isEmpty)
        #expect(Hostile.listing(daemon.dataRoot + "/tmp").filter { $0.hasPrefix("litestream-") }.isEmpty)
        #expect(waitUntil(timeout: 5) { Self.litestreamChildren(of: daemon.process.processIdentifier).isEmpty }, "litestream was left running")
        // Not held: the next call on the account is answered at once (nothing to pull here).
        let again = try Self.accountctl(["snapshot", "zed"], socket: daemon.socket)
        #expect(again.stderr.contains("AccountNotFound") && again.seconds < 5, "\(again.stderr)")
    }

    /// SIGTERM while a pull waits for a frozen store (at the default deadline of ten minutes):
    /// the Litestream child is killed at once, and the daemon stops within 10 s.
    @Test func sigtermDuringAPullFromAFrozenStoreStopsTheDaemonAtOnce() throws {
        let dir = TestDirectory()
        let store = try SeaweedStore(directory: dir.sub("weed"))
        let (daemon, _) = try ObjectStoreReplicationTests.host(
            dir, "host-b", replica: store.replica("host-a"), bundle: try ObjectStoreReplicationTests.bundle(dir), litestream: false)
        store.freeze()
        defer { store.thaw() }
        let pull = Process()
        pull.executableURL = URL(fileURLWithPath: Binaries.accountctl)
        pull.arguments = ["--socket", daemon.socket, "pull", "alice"]
        pull.standardOutput = FileHandle.nullDevice
        pull.standardError = FileHandle.nullDevice
        try E2E.spawning { try pull.run() }
        defer { if pull.isRunning { kill(pull.processIdentifier, SIGKILL) } }
        let pid = daemon.process.processIdentifier
        var children: [Int32] = []
        #expect(waitUntil(timeout: 20) { children = Self.litestreamChildren(of: pid); return !children.isEmpty }, "the pull never ran litestream")

        let sent = Date()
        kill(pid, SIGTERM)
        let stopped = waitUntil(timeout: 30) { !daemon.process.isRunning }
        let took = Date().timeIntervalSince(sent)
        #expect(stopped && took < 10, "the daemon stopped \(took) s after SIGTERM: \(daemon.log.suffix(2000))")
        for child in children { #expect(kill(child, 0) != 0 || Self.litestreamChildren(of: pid).isEmpty, "litestream \(child) still runs") }
        #expect(daemon.log.contains("shutting down"), "\(daemon.log.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("alice")))
        #expect(waitUntil(timeout: 10) { !pull.isRunning }, "the pull's client never got an answer or a closed connection")
    }

    /// `SnapshotNotFound` names as the earliest time the one a restore at it really gives:
    /// Litestream records times to the second, and a restore at the named time succeeds and
    /// reports that very time (it used to name the next second, one later than the state's).
    @Test func theEarliestTimeNamedIsTheTimeARestoreThereReports() throws {
        let dir = TestDirectory()
        let host = try ReplicatingHost(dir)
        let (daemon, litestream, client) = (host.daemon, host.litestream, host.client)
        try ReplicationTests.set(client, "word", "one", account: "alice")
        try litestream.syncAndWait(daemon.accountPath("alice"))
        Thread.sleep(forTimeInterval: 2.2)
        try ReplicationTests.set(client, "word", "two", account: "alice")
        try litestream.syncAndWait(daemon.accountPath("alice"))

        let refused = try E2E.accountctl(
            ["restore", "alice", "--at", ObjectStoreReplicationTests.rfc3339(Date().addingTimeInterval(-3600))], socket: daemon.socket)
        #expect(refused.status == 1 && refused.stderr.contains("SnapshotNotFound"), "\(refused.stderr)")
        let named = try #require(refused.stderr.range(of: #"Restore at (\S+) or later"#, options: .regularExpression).map {
            String(refused.stderr[$0].dropFirst("Restore at ".count).dropLast(" or later".count))
        })
        let earliest = try #require(ObjectStoreReplicationTests.date(named), "\(named)")

        // A second before it: refused, naming the same time.
        let before = try E2E.accountctl(["restore", "alice", "--at", ObjectStoreReplicationTests.rfc3339(earliest.addingTimeInterval(-1))], socket: daemon.socket)
        #expect(before.status == 1 && before.stderr.contains("Restore at \(named) or later"), "\(before.stderr)")
        // At it: the earliest state, and the time reported is the time named.
        let restored = try E2E.accountctl(["--json", "restore", "alice", "--at", named], socket: daemon.socket)
        try #require(restored.status == 0, "\(restored.stdout) \(restored.stderr) \(daemon.log.suffix(2000))")
        let at = try JSONParser.parse(restored.stdout)["at"]?.stringValue.flatMap(ObjectStoreReplicationTests.date)
        #expect(at == earliest, "named \(named), the restore reports \(restored.stdout)")
        // The state there is the account's first: created, before any Set.
        #expect(try ReplicationTests.get(client, "word", account: "alice") != "two")
    }
}
