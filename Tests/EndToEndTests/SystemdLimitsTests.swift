import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The watchdog and the file limit, as docs/RELIABILITY.md describes them: no client can
/// keep the watchdog from being fed, and a daemon that could run out of file descriptors
/// before it runs out of connection slots refuses to start.
extension SystemdTests {
    // MARK: - A watchdog no client can starve

    /// Eight idle clients hold every slot of `limits.maxConnections: 8`: the daemon still proves
    /// itself to the watchdog, because its liveness check needs no connection.
    @Test func watchdogIsFedWhileIdleClientsHoldEverySlot() throws {
        let dir = TestDirectory()
        let notify = try DatagramReceiver(path: dir.sub("notify.sock"))
        defer { notify.close() }
        let daemon = try E2E.daemon(
            directory: dir.path,
            environment: [
                "NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000", "ACCOUNTD_LIMITS_MAX_CONNECTIONS": "8",
                // No admins' reserve: these clients are root, an admin.
                "ACCOUNTD_LIMITS_ADMIN_RESERVED_CONNECTIONS": "0",
            ])
        var idle: [RawClient] = []
        for _ in 0..<8 {
            idle.append(try #require(LimitsTests.servedClient(daemon.socket), "connection \(idle.count + 1) of 8 was not served"))
        }
        // Every slot is taken: a ninth connection is refused.
        try LimitsTests.expectRefused(daemon.socket)

        let since = Date()
        let kicks = { notify.datagrams.filter { $0.assignments["WATCHDOG"] == "1" && $0.received > since }.count }
        // Every 0.5 s (half of WATCHDOG_USEC): 8 in 4 s; 3 leaves room for a loaded machine.
        let fed = waitUntil(timeout: 4) { kicks() >= 3 }
        #expect(fed, "\(kicks()) WATCHDOG=1 in 4 s while 8 idle clients held every slot: \(daemon.log.suffix(1500))")
        // The slots were held throughout.
        try LimitsTests.expectRefused(daemon.socket)
        for client in idle { #expect(try client.callOne("ping").error == nil) }
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    // MARK: - The file limit

    /// Starts accountd under `prlimit --nofile=SOFT:HARD` with the sample bundle in `dir`;
    /// returns the process, its socket and its log.
    static func startUnderFileLimit(
        soft: Int, hard: Int, in dir: borrowing TestDirectory, environment: [String: String] = [:]
    ) throws -> (process: Process, socket: String, log: String) {
        try Files.write("{}\n", to: dir.sub("none.yaml"))
        let socket = dir.sub("accountd.sock")
        let log = dir.sub("accountd.log")
        let process = try E2E.spawning {
            try SystemdSupport.start(
                "/usr/bin/prlimit",
                [
                    "--nofile=\(soft):\(hard)", Binaries.accountd, "--data-root", dir.sub("data"), "--socket", socket,
                    "--schema", Repository.sampleBundle, "--config", dir.sub("none.yaml"),
                ],
                environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }, log: log)
        }
        return (process, socket, log)
    }

    /// The default 512 connections cannot fit in 256 files: accountd says so, with both numbers
    /// and what to do, and exits non-zero without binding its socket.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"), "needs prlimit (util-linux)"))
    func refusesToStartWhenConnectionsCannotFitTheFileLimit() throws {
        let dir = TestDirectory()
        let (process, socket, log) = try Self.startUnderFileLimit(soft: 256, hard: 256, in: dir)
        defer { E2E.stop(process, signal: SIGKILL, timeout: 10) }
        let exited = waitUntil(timeout: 30) { !process.isRunning }
        #expect(exited, "accountd started although 512 connections cannot fit in 256 files: \(SystemdSupport.tail(log))")
        guard exited else { return }
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        for needed in ["limits.maxConnections is 512", "at most 256 files", "LimitNOFILE", "ulimit -n"] {
            #expect(text.contains(needed), "the message does not say '\(needed)': \(text)")
        }
        #expect(SystemdSupport.identity(of: socket) == nil, "it bound its socket before refusing")

        // Fewer connections that fit are fine: the check is about the numbers, not the limit itself.
        let fitting = TestDirectory()
        let small = try Self.startUnderFileLimit(
            soft: 256, hard: 256, in: fitting, environment: ["ACCOUNTD_LIMITS_MAX_CONNECTIONS": "16"])
        defer { E2E.stop(small.process, signal: SIGKILL, timeout: 10) }
        #expect(E2E.waitUntilServing(small.process, socket: small.socket), "\(SystemdSupport.tail(small.log))")
        #expect(E2E.stop(small.process, timeout: 30) == 0)
    }

    /// A soft limit below what 512 connections need, under a hard limit that has room (16384, or
    /// this process's own hard limit if lower): the daemon raises its soft limit to the hard one
    /// and serves.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"), "needs prlimit (util-linux)"))
    func raisesItsSoftFileLimitUpToTheHardLimit() throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        // As high as this process may set it (lowering a hard limit needs no privilege).
        let hard = Int(clamping: min(limit.rlim_max, 16384))
        if hard < 4096 { try Test.cancel("the hard file limit here is \(hard); the test needs 4096 to leave room for 512 connections") }
        let dir = TestDirectory()
        let (process, socket, log) = try Self.startUnderFileLimit(soft: 256, hard: hard, in: dir)
        defer { E2E.stop(process, signal: SIGKILL, timeout: 10) }
        #expect(E2E.waitUntilServing(process, socket: socket), "\(SystemdSupport.tail(log))")
        let pid = try #require(try RawClient(socket: socket).callOne("info").parameters["pid"]?.intValue)
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }.map(String.init) ?? ""
        let figures = line.split(separator: " ").compactMap { Int($0) }
        #expect(figures == [hard, hard], "\(line)")
        #expect(E2E.stop(process, timeout: 30) == 0)
    }
}
