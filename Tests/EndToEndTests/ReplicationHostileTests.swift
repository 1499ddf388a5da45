import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Replication under a hostile tester (issue 29): the replica's password never leaves the
/// daemon, and a Litestream that hangs cannot hold up anyone else. Neither needs Litestream
/// itself: a stand-in program and a socket that never answers play its part.
@Suite struct ReplicationHostileTests {
    static let password = "S3cret"
    static let replica = "sftp://backup:\(password)@127.0.0.1:1/accountd"

    /// A `litestream` stand-in that fails the way a real one may: it prints its arguments
    /// and every replica URL of its configuration, and the password on its own, then exits 1.
    /// Its command line, which any local user could read, goes to `<path>.argv`.
    static func writeFailingLitestream(at path: String) throws {
        try Files.write(
            """
            #!/bin/sh
            echo "$*" >> \(path).argv
            config=""
            while [ $# -gt 0 ]; do [ "$1" = "-config" ] && config="$2"; shift; done
            echo "restore failed: $(grep url: "$config"): ssh: unable to authenticate user backup with password \(password)" >&2
            exit 1

            """, to: path)
        #expect(chmod(path, 0o755) == 0)
    }

    /// With `replication.litestream.replica: sftp://backup:S3cret@host/accountd`: the
    /// `Replication` reply (to a non-admin and to root), the log, and a failed `Pull`'s
    /// error all name the replica with the password masked. Only Litestream's own
    /// configuration (0600) holds it.
    @Test func theReplicasPasswordNeverLeavesTheDaemon() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        let program = dir.sub("fake-litestream")
        try Self.writeFailingLitestream(at: program)
        var environment = E2E.replicationEnvironment(replica: Self.replica, runDirectory: dir.sub("run"))
        environment["ACCOUNTD_REPLICATION_LITESTREAM_PROGRAM"] = program
        environment["ACCOUNTD_SOCKET_MODE"] = "0666"
        let daemon = try E2E.daemon(directory: dir.path, environment: environment)
        let masked = "sftp://backup:***@127.0.0.1:1/accountd"

        let root = try daemon.client()
        let status = try root.callOne("replication")
        #expect(status.parameters["replica"] == JSONValue.string(masked), "\(status)")
        #expect(!"\(status)".contains(Self.password))

        if getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
            let nobody = try E2E.run(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.accountctl, "--socket", daemon.socket, "--json", "replication"])
            // No Litestream runs here: the check fails (status 1), and still shows the replica masked.
            #expect(nobody.status == 1, "\(nobody.stderr)")
            #expect(nobody.stdout.contains(masked), "\(nobody.stdout)")
            #expect(!(nobody.stdout + nobody.stderr).contains(Self.password), "\(nobody.stdout)")
        }

        let pull = try root.callOne("pull alice")
        #expect(pull.error != nil, "\(pull)")
        let text = "\(pull.error?.rawValue ?? "") \(pull.parameters)"
        #expect(text.contains("backup:***@127.0.0.1"), "\(text)")
        #expect(!text.contains(Self.password), "the pull's error carries the password: \(text)")
        let offline = try E2E.run(
            Binaries.accountd, ["pull", "--replica", Self.replica, "--data-root", dir.sub("offline"), "--litestream", program, "alice"])
        #expect(offline.status != 0)
        #expect(!(offline.stdout + offline.stderr).contains(Self.password), "\(offline.stderr)")
        // Litestream was given the replica in a private file, not on its command line, and
        // the file is gone.
        let argv = try String(contentsOfFile: program + ".argv", encoding: .utf8)
        #expect(argv.contains("restore -config") && !argv.contains(Self.password), "\(argv)")
        #expect(Hostile.listing(daemon.dataRoot + "/tmp").filter { $0.hasPrefix("litestream-restore-") }.isEmpty)
        #expect(Hostile.listing(dir.sub("offline/tmp")).filter { $0.hasPrefix("litestream-restore-") }.isEmpty)

        #expect(E2E.stop(daemon, timeout: 30) == 0)
        #expect(daemon.log.contains("accounts replicate to \(masked)"), "\(daemon.log.suffix(2000))")
        #expect(!daemon.log.contains(Self.password), "the log carries the password: \(daemon.log)")
        // Litestream itself needs it: its configuration has it, readable by the daemon's user alone.
        #expect(try String(contentsOfFile: dir.sub("run/litestream.yml"), encoding: .utf8).contains(Self.replica))
        #expect(Files.mode(dir.sub("run/litestream.yml")) == 0o600)
    }

    /// A Litestream whose control socket accepts connections and never answers, and 32
    /// clients asking `Replication` (anyone may): `status` and `switch` still answer at once,
    /// every `Replication` caller hears within 2 s that Litestream did not answer, and the
    /// daemon asked Litestream a handful of times, not once per caller.
    @Test func aHungLitestreamHoldsUpNobody() throws {
        let dir = TestDirectory()
        let run = dir.sub("run")
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        let hung = try HungSocket(path: run + "/litestream.sock")
        defer { hung.close() }
        let daemon = try E2E.daemon(
            directory: dir.path, environment: E2E.replicationEnvironment(replica: "file://" + dir.sub("replica"), runDirectory: run))
        for account in ["carol", "alice", "bob"] {
            #expect(try daemon.client().callOne("switch \(account)").error == nil)
        }

        let askers = try (0..<32).map { _ in try Hostile.client(daemon.socket, timeout: 10) }
        let asked = Date()
        for asker in askers { try asker.send("replication\n") }

        let started = Date()
        let status = try Hostile.client(daemon.socket, timeout: 10).callOne("status carol")
        #expect(status.error == nil, "\(status)")
        #expect(Date().timeIntervalSince(started) < 2, "status carol took \(Date().timeIntervalSince(started)) s")
        let switchStarted = Date()
        let switched = try Hostile.client(daemon.socket, timeout: 30).callOne("switch alice")
        #expect(switched.error == nil, "\(switched)")
        #expect(Date().timeIntervalSince(switchStarted) < 2, "switch alice took \(Date().timeIntervalSince(switchStarted)) s")

        for asker in askers {
            let reply = try asker.readReply()
            #expect(reply.error == nil, "\(reply)")
            #expect(reply.parameters["litestream"] == false, "\(reply)")
            let statuses = reply.parameters["accounts"]?.arrayValue?.compactMap { $0["status"]?.stringValue }
            #expect(statuses == ["alice", "bob", "carol"].map { _ in "unknown" }, "\(reply)")
        }
        #expect(Date().timeIntervalSince(asked) < 2.5, "the Replication callers waited \(Date().timeIntervalSince(asked)) s")
        #expect(hung.pendingConnections() <= 4, "one look-up at a time, shared: Litestream was asked more often than that")
        #expect(daemon.log.contains("did not answer within"), "\(daemon.log.suffix(2000))")

        // Litestream gone, its socket file left behind: not running, so nothing replicates.
        hung.close()
        Thread.sleep(forTimeInterval: 1.2)
        let gone = try Hostile.client(daemon.socket, timeout: 10).callOne("replication")
        #expect(gone.parameters["litestream"] == false, "\(gone)")
        #expect(gone.parameters["accounts"]?.arrayValue?.compactMap { $0["status"]?.stringValue } == ["not-replicated", "not-replicated", "not-replicated"], "\(gone)")
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    /// Issue 29, finding 3: with Litestream's control socket accepting and never answering,
    /// `Remove` hung 34 to 36 s on a pool thread (a blocking read with a 35 s timeout), then
    /// failed with "Resource temporarily unavailable", and SIGTERM waited for it. Now it
    /// answers within seconds that Litestream did not answer, with the account intact, and
    /// a SIGTERM during it stops the daemon promptly.
    @Test func aRemoveWithAHungLitestreamAnswersWithinSecondsAndChangesNothing() throws {
        let dir = TestDirectory()
        let run = dir.sub("run")
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        let hung = try HungSocket(path: run + "/litestream.sock")
        defer { hung.close() }
        let daemon = try E2E.daemon(
            directory: dir.path, environment: E2E.replicationEnvironment(replica: "file://" + dir.sub("replica"), runDirectory: run))
        let client = try Hostile.client(daemon.socket, timeout: 60)
        #expect(try client.callOne("switch bob").error == nil)
        #expect(try client.callOne(#"set user theme "bob's""#).error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        let bob = try TableDump.dumpFile(path: daemon.accountPath("bob"))

        for request in ["remove bob", "remove bob purge"] {
            let started = Date()
            let reply = try client.callOne(request)
            let took = Date().timeIntervalSince(started)
            #expect(took < 7, "\(request) took \(took) s")
            #expect(reply.error == .internalError, "\(request) -> \(reply.encoded())")
            let message = reply.message ?? ""
            #expect(message.contains("Litestream did not answer within 5 s"), "\(message)")
            #expect(message.contains("the account was not removed") && message.contains("Is accountd-litestream running?"), "\(message)")
            #expect(try TableDump.dumpFile(path: daemon.accountPath("bob")) == bob)
            #expect(Hostile.listing(daemon.dataRoot + "/snapshots/bob").isEmpty, "\(Hostile.listing(daemon.dataRoot + "/snapshots/bob"))")
        }
        #expect(try client.callOne("get user theme bob").parameters["value"] == "bob's")
        #expect(try client.callOne("status bob").parameters["state"] != "missing")

        // SIGTERM while a Remove waits for Litestream: the daemon stops within seconds.
        let remover = try Hostile.client(daemon.socket, timeout: 60)
        try remover.send("remove bob\n")
        Thread.sleep(forTimeInterval: 0.5)
        let stopping = Date()
        #expect(E2E.stop(daemon, timeout: 30) == 0)
        let stopped = Date().timeIntervalSince(stopping)
        #expect(stopped < 7, "stopping during a Remove took \(stopped) s")
        #expect(try TableDump.dumpFile(path: daemon.accountPath("bob")) == bob)
    }
}

/// A Unix socket that takes connections (the kernel completes them into its backlog) and
/// never reads or answers: a hung Litestream control socket.
final class HungSocket {
    let fd: Int32
    private var closed = false

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemdTestError("socket(): \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8.prefix($0.count - 1))) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 512) == 0 else { throw SystemdTestError("bind/listen \(path): \(String(cString: strerror(errno)))") }
    }

    /// Accepts (and closes) every connection waiting: how many clients connected so far.
    func pendingConnections() -> Int {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var count = 0
        while true {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return count }
            Glibc.close(connection)
            count += 1
        }
    }

    /// Closes the socket (once): nothing listens on the path any more.
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }
}
