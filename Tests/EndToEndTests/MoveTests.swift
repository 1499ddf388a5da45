import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Moving an account between two hosts with one command on each (SPEC section 12, "Time
/// travel and moves"): `remove ACCOUNT --handoff` on the old host, `pull ACCOUNT --replica
/// OLD_URL` on the new one. Two data roots, each with its own daemon and the real Litestream
/// 0.5, stand for the two hosts; each replicates to its own `file://` base.
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct MoveTests {
    /// One host under `dir/<name>`: a daemon replicating to `dir/replica-<name>`, and its Litestream.
    static func host(_ dir: borrowing TestDirectory, _ name: String, bundle: String) throws -> (replica: String, daemon: DaemonProcess, litestream: LitestreamProcess) {
        let replica = "file://" + dir.sub("replica-" + name)
        let daemon = try E2E.replicatingDaemon(directory: dir.sub("host-" + name), bundle: bundle, replica: replica, runDirectory: dir.sub("run-" + name))
        let litestream = try LitestreamProcess(config: dir.sub("run-\(name)/litestream.yml"), log: dir.sub("litestream-" + name))
        return (replica, daemon, litestream)
    }

    static func execute(_ client: RawClient, account: String, _ sql: String, _ parameters: [JSONValue]) throws -> Reply {
        try client.callOne(
            E2E.request("Execute", [("account", .string(account)), ("statements", .array([.object([("sql", .string(sql)), ("parameters", .array(parameters))])]))]))
    }

    /// Which of the `acknowledged` writes of ``write(_:socket:acknowledged:refusals:)`` (a row of
    /// `item` at an even step, a `user` key at an odd one) `daemon` does not hold for alice,
    /// and alice's `user` keys there.
    static func missing(_ acknowledged: [String], on daemon: DaemonProcess, client: RawClient) throws -> (missing: [String], keys: Set<String>) {
        let rows = Set(try E2E.sql(daemon.accountPath("alice"), "SELECT name FROM item;").split(separator: "\n").map(String.init))
        let keys = Set(
            (try client.callOne(E2E.request("Keys", [("namespace", "user"), ("account", "alice")])).parameters["keys"]?.arrayValue ?? [])
                .compactMap(\.stringValue))
        let missing = acknowledged.filter { name in
            let step = Int(name.split(separator: "-").last!)!
            return step % 2 == 0 ? !rows.contains(name) : !keys.contains(name)
        }
        return (missing, keys)
    }

    /// One writer: rows with `Execute` on even steps, preferences with `Set` on odd ones, each
    /// name recorded once acknowledged, until the first refusal (recorded by its name).
    static func write(_ index: Int, socket: String, acknowledged: E2E.Locked<[String]>, refusals: E2E.Locked<[String]>) {
        do {
            let own = try RawClient(socket: socket)
            for step in 0..<1_000_000 {
                let name = "w\(index)-\(step)"
                let reply =
                    step % 2 == 0
                    ? try execute(own, account: "alice", "INSERT INTO item(name, n) VALUES (?, ?)", [.string(name), .int(Int64(step))])
                    : try own.callOne(
                        E2E.request("Set", [("namespace", "user"), ("key", .string(name)), ("value", .int(Int64(step))), ("account", "alice")]))
                if let error = reply.error {
                    refusals.withLock { $0.append(error.shortName) }
                    return
                }
                acknowledged.withLock { $0.append(name) }
            }
        } catch {
            refusals.withLock { $0.append("\(error)") }
        }
    }

    @Test func aMoveUnderWriteLoadLosesNothingAcknowledgedAndTheOldHostRefusesTheAccount() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let a = try Self.host(dir, "a", bundle: bundle)
        let b = try Self.host(dir, "b", bundle: bundle)
        let clientA = try a.daemon.client()
        #expect(try clientA.callOne("switch alice").parameters["action"] == "created")
        #expect(try clientA.callOne("switch other").parameters["action"] == "created")
        try ReplicationTests.set(clientA, "before", "move", account: "alice")
        #expect(a.litestream.waitUntilReplicating(a.daemon.accountPath("alice")), "\(a.litestream.log.suffix(2000))")

        // Eight clients write alice (rows with Execute, preferences with Set) until A refuses them.
        let acknowledged = E2E.Locked<[String]>([])
        let refusals = E2E.Locked<[String]>([])
        let socket = a.daemon.socket
        let finished = E2E.Locked(0)
        // Threads of their own: the writers block on their sockets for as long as the test runs.
        for index in 0..<8 {
            Thread.detachNewThread {
                defer { finished.withLock { $0 += 1 } }
                Self.write(index, socket: socket, acknowledged: acknowledged, refusals: refusals)
            }
        }
        // The operator on host A, once the writers are going.
        Thread.sleep(forTimeInterval: 1.5)
        let begun = Date()
        let done = try E2E.accountctl(["--json", "remove", "alice", "--handoff"], socket: socket)
        let handoffSeconds = Date().timeIntervalSince(begun)
        #expect(waitUntil(timeout: 60) { finished.current == 8 }, "the writers did not stop after the handoff")
        try #require(done.status == 0, "handoff: \(done.stdout) \(done.stderr) \(a.daemon.log.suffix(3000))")
        let reply = try JSONParser.parse(done.stdout)
        #expect(reply["handoff"] == true && reply["purged"] == false, "\(done.stdout)")
        #expect(acknowledged.current.count > 16, "the writers barely wrote: \(acknowledged.current.count)")
        // Every writer was stopped by the handoff with AccountMoved, none by anything else.
        #expect(refusals.current.count == 8 && refusals.current.allSatisfy { $0 == "AccountMoved" }, "\(refusals.current)")

        // Host B pulls alice from A's replica: one command.
        let pullStarted = Date()
        let pulled = try E2E.accountctl(["--json", "pull", "alice", "--replica", a.replica], socket: b.daemon.socket)
        let pullSeconds = Date().timeIntervalSince(pullStarted)
        try #require(pulled.status == 0, "\(pulled.stdout) \(pulled.stderr) \(b.daemon.log.suffix(2000))")
        print("move timings: handoff \(handoffSeconds) s, pull \(pullSeconds) s, acknowledged writes \(acknowledged.current.count)")

        // Every acknowledged write is on B.
        let clientB = try b.daemon.client()
        let (missing, keys) = try Self.missing(acknowledged.current, on: b.daemon, client: clientB)
        let rows = try E2E.sql(b.daemon.accountPath("alice"), "SELECT count(*) FROM item;")
        #expect(missing.isEmpty, "acknowledged on A but not on B: \(missing.prefix(20)) of \(missing.count)")
        #expect(keys.contains("before"))
        #expect(try clientB.callOne("switch alice").parameters["action"] == "opened")

        // A refuses alice for everything that would serve it, and after a restart still.
        func expectMoved(_ daemon: DaemonProcess, _ when: String) throws {
            let client = try daemon.client()
            for line in [
                "switch alice", "restore alice", "export alice sql", "verify alice", "snapshot alice",
                E2E.request("Get", [("namespace", "user"), ("key", "before"), ("account", "alice")]),
                E2E.request("Set", [("namespace", "user"), ("key", "after"), ("value", 1), ("account", "alice")]),
                E2E.request("Execute", [("account", "alice"), ("statements", .array([.object([("sql", "INSERT INTO item(name, n) VALUES ('late', 0)")])]))]),
                E2E.request("Import", [("account", "alice"), ("path", .string(dir.sub("nothing.sqlite")))]),
                E2E.request("Query", [("account", "alice"), ("sql", "SELECT count(*) FROM item")]),
            ] {
                let answer = try client.call(line.hasPrefix("export") ? #"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"sql"},"more":true}"# : line).last!
                #expect(answer.error == .accountMoved, "\(when): \(line) → \(answer.error?.rawValue ?? "ok") \(answer.parameters)")
            }
            #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("alice")), "\(when)")
        }
        try expectMoved(a.daemon, "after the handoff")
        try a.daemon.restart()
        try expectMoved(a.daemon, "after a restart")
        // The old snapshot comes back over the move only by an explicit choice.
        let refused = try E2E.accountctl(["restore", "alice"], socket: a.daemon.socket)
        #expect(refused.status != 0 && refused.stderr.contains("AccountMoved") && refused.stderr.contains("--reclaim"), "\(refused.stderr)")
        // So does a plain pull from A's own replica (its pre-handoff copy), with or without --replica (hostile33b N4).
        for arguments in [["pull", "alice"], ["pull", "alice", "--replica", a.replica]] {
            let stale = try E2E.accountctl(arguments, socket: a.daemon.socket)
            #expect(stale.status != 0 && stale.stderr.contains("AccountMoved") && stale.stderr.contains("--reclaim"), "\(arguments): \(stale.stdout) \(stale.stderr)")
            #expect(!FileManager.default.fileExists(atPath: a.daemon.accountPath("alice")) && FileManager.default.fileExists(atPath: a.daemon.dataRoot + "/moved/alice"))
        }

        // And back: B hands alice off, A pulls it from B's replica; the record on A is gone.
        #expect(try clientB.callOne("switch other").error == nil)
        #expect(b.litestream.waitUntilReplicating(b.daemon.accountPath("alice")), "\(b.litestream.log.suffix(2000))")
        let back = try E2E.accountctl(["remove", "alice", "--handoff"], socket: b.daemon.socket)
        #expect(back.status == 0, "\(back.stdout) \(back.stderr)")
        let home = try E2E.accountctl(["pull", "alice", "--replica", b.replica], socket: a.daemon.socket)
        #expect(home.status == 0, "\(home.stdout) \(home.stderr)")
        #expect(!FileManager.default.fileExists(atPath: a.daemon.dataRoot + "/moved/alice"))
        let again = try a.daemon.client()
        #expect(try again.callOne("switch alice").parameters["action"] == "opened")
        #expect(try E2E.sql(a.daemon.accountPath("alice"), "SELECT count(*) FROM item;") == rows)
        #expect(FileManager.default.fileExists(atPath: b.daemon.dataRoot + "/moved/alice"))
        #expect(try b.daemon.client().callOne("switch alice").error == .accountMoved)
        // On B, the explicit choice: its own snapshot brought back over the move ends the handoff there.
        let reclaimed = try E2E.accountctl(["restore", "alice", "--reclaim"], socket: b.daemon.socket)
        #expect(reclaimed.status == 0, "\(reclaimed.stdout) \(reclaimed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: b.daemon.dataRoot + "/moved/alice"))
        #expect(try b.daemon.client().callOne("switch alice").parameters["action"] == "opened")
    }

    @Test func aHandoffWithoutLitestreamIsRefusedAndChangesNothing() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        // Replication configured, Litestream not running: the final sync cannot happen.
        let daemon = try E2E.replicatingDaemon(
            directory: dir.sub("host"), bundle: bundle, replica: "file://" + dir.sub("replica"), runDirectory: dir.sub("run"))
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        _ = try client.callOne("switch other")
        let before = try E2E.sha256sum(daemon.accountPath("alice"))
        let refused = try client.callOne(E2E.request("Remove", [("account", "alice"), ("handoff", true)]))
        #expect(refused.error == .internalError && (refused.parameters["message"]?.stringValue ?? "").contains("cannot be handed off"), "\(refused.parameters)")
        #expect(try E2E.sha256sum(daemon.accountPath("alice")) == before)
        #expect(!FileManager.default.fileExists(atPath: daemon.dataRoot + "/moved/alice"))
        #expect(try client.callOne("switch alice").parameters["action"] == "opened")
        // Without replication at all, likewise.
        let plain = try ImportTests.daemon(directory: dir.sub("plain"), bundle: bundle)
        let plainClient = try plain.client()
        _ = try plainClient.callOne("switch bob")
        _ = try plainClient.callOne("switch other")
        #expect(try plainClient.callOne("remove bob handoff").error == .internalError)
        #expect(FileManager.default.fileExists(atPath: plain.accountPath("bob")))
    }

    /// A crash between the record and the end of the handoff leaves the account refused with
    /// its file still here; a pull of it, from its own replica or another, answers `AccountMoved`
    /// as every call does (hostile33c #13), naming how to finish it and changing nothing; the
    /// same command finishes the handoff.
    @Test func aHandoffInterruptedByACrashIsFinishedByRunningItAgain() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let a = try Self.host(dir, "a", bundle: bundle)
        let client = try a.daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        _ = try client.callOne("switch other")
        try ReplicationTests.set(client, "last", "word", account: "alice")
        #expect(a.litestream.waitUntilReplicating(a.daemon.accountPath("alice")), "\(a.litestream.log.suffix(2000))")
        // What a crash right after the record leaves: the mark in the file (written first), the
        // record, and the file.
        a.daemon.stop(signal: SIGKILL)
        _ = try E2E.sql(
            a.daemon.accountPath("alice"),
            #"INSERT OR REPLACE INTO accountd_meta(key, value) VALUES ('handed_off_from', '{"replica":"\#(a.replica)","at":"2026-11-26T12:00:00.000Z"}');"#)
        try FileManager.default.createDirectory(atPath: a.daemon.dataRoot + "/moved", withIntermediateDirectories: true)
        try Files.write(
            #"{"account":"alice","handedOffAt":"2026-11-26T12:00:00.000Z","replica":"\#(a.replica)"}"# + "\n", to: a.daemon.dataRoot + "/moved/alice")
        try a.daemon.restart()
        let again = try a.daemon.client()
        #expect(try again.callOne("switch alice").error == .accountMoved)
        let before = try E2E.sha256sum(a.daemon.accountPath("alice"))
        for replica in [[], ["--replica", "file://" + dir.sub("replica-elsewhere")]] {
            let pulled = try E2E.accountctl(["pull", "alice"] + replica, socket: a.daemon.socket)
            #expect(pulled.status == 1 && pulled.stderr.contains("AccountMoved") && pulled.stderr.contains("did not finish"), "\(replica): \(pulled.stderr)")
            #expect(pulled.stderr.contains("accountctl remove alice --handoff"), "\(pulled.stderr)")
        }
        #expect(try E2E.sha256sum(a.daemon.accountPath("alice")) == before)
        #expect(FileManager.default.fileExists(atPath: a.daemon.dataRoot + "/moved/alice"))
        let finished = try E2E.accountctl(["remove", "alice", "--handoff"], socket: a.daemon.socket)
        #expect(finished.status == 0, "\(finished.stdout) \(finished.stderr) \(a.daemon.log.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: a.daemon.accountPath("alice")))
        #expect(try again.callOne("switch alice").error == .accountMoved)
        // The replica has the last write: host B (its own replica another) pulls it.
        let pulled = try E2E.run(
            Binaries.accountd, ["pull", "--replica", a.replica, "--data-root", dir.sub("host-b/data"), "--litestream", TestLitestream.path!, "alice"],
            environment: ["ACCOUNTD_REPLICATION_LITESTREAM_REPLICA": "file://" + dir.sub("replica-b")])
        #expect(pulled.status == 0, "\(pulled.stderr)")
        #expect(try E2E.sql(dir.sub("host-b/data/accounts/alice.sqlite"), "SELECT value FROM accountd_prefs WHERE key = 'last';") == "\"word\"")
    }
}
