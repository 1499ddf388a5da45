import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Each caller uid gets a fair share (hostile31 F2): one person's slow statements take at
/// most `limits.statementsPerUid` of the blocking pool's threads, and one person's idle
/// connections at most `limits.maxConnectionsPerUid` of `limits.maxConnections`, so another
/// person is still answered at once. With two real non-root uids: `nobody` (65534) and
/// `daemon` (1), each granted write on the account named like it.
@Suite(.enabled(
    if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && getpwnam("nobody")?.pointee.pw_uid == 65534
        && getpwnam("daemon")?.pointee.pw_uid == 1,
    "needs root, setpriv, and the users nobody (65534) and daemon (1)"))
struct FairShareTests {
    static let nobody = 65534
    static let daemonUser = 1

    /// A daemon (as root) with the grants and `limits` given, and the accounts `nobody` and `daemon`.
    static func daemon(_ dir: borrowing TestDirectory, limits: String) throws -> DaemonProcess {
        #expect(chmod(dir.path, 0o755) == 0)
        let config = dir.sub("fair.yaml")
        try Files.write(
            """
            socket:
              mode: "0666"
            limits:
            \(limits)
            access:
              grants:
                - { user: nobody, accounts: "$user", access: write }
                - { user: "1", accounts: "$user", access: write }
            """, to: config)
        let daemon = try E2E.spawning { try DaemonProcess(directory: dir.path, arguments: ["--config", config]) }
        for account in ["nobody", "daemon"] {
            let made = try E2E.accountctl(["switch", account], socket: daemon.socket)
            try #require(made.status == 0, "\(made.stderr)")
        }
        return daemon
    }

    /// Starts `accountctl arguments` as `uid`, without waiting for it.
    static func start(as uid: Int, _ daemon: DaemonProcess, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", Binaries.accountctl, "--socket", daemon.socket] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try E2E.spawning { try process.run() }
        return process
    }

    static func stopAll(_ processes: [Process]) {
        for process in processes where process.isRunning { process.terminate() }
        for process in processes { process.waitUntilExit() }
    }

    @Test func oneUidsSlowQueriesLeaveThreadsForAnotherUid() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemon(dir, limits: "  queryTimeoutMs: 3000\n  maxConnections: 128")
        // More statements that run until the timeout than the daemon has pool threads (16 on two cores).
        let forever = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
        var hogs: [Process] = []
        defer { Self.stopAll(hogs) }
        for _ in 0..<24 { hogs.append(try Self.start(as: Self.nobody, daemon, ["query", "--account", "nobody", forever])) }
        Thread.sleep(forTimeInterval: 1.5)
        #expect(hogs.allSatisfy { $0.isRunning }, "nobody's statements still run")

        // daemon's own account is answered at once, though nobody's statements wait for threads.
        for _ in 0..<3 {
            let started = Date()
            let answered = try AccessTests.accountctl(as: Self.daemonUser, socket: daemon.socket, ["query", "--account", "daemon", "--json", "SELECT 1"])
            let took = Date().timeIntervalSince(started)
            #expect(answered.status == 0, "\(answered.stderr)")
            #expect(took < 1, "daemon's Query SELECT 1 took \(took) s behind nobody's statements")
        }
        // nobody's own statements all still end, each in its turn (at the timeout).
        #expect(waitUntil(timeout: 30, interval: 0.1) { !hogs.contains(where: \.isRunning) }, "nobody's statements all ended")
    }

    @Test func oneUidsIdleConnectionsDoNotLockAnotherUidOut() throws {
        let dir = TestDirectory()
        // Eight connections in all; each uid at most half of them.
        let daemon = try Self.daemon(dir, limits: "  maxConnections: 8")
        var watchers: [Process] = []
        defer { Self.stopAll(watchers) }
        for _ in 0..<4 { watchers.append(try Self.start(as: Self.nobody, daemon, ["watch"])) }
        Thread.sleep(forTimeInterval: 1.5)
        #expect(watchers.allSatisfy { $0.isRunning }, "nobody's four watchers are connected")

        // nobody's fifth connection is refused, naming the per-uid share ...
        let fifth = try AccessTests.accountctl(as: Self.nobody, socket: daemon.socket, ["ping"])
        #expect(fifth.status != 0)
        #expect(fifth.stderr.contains("TooManyConnections") && fifth.stderr.contains("limits.maxConnectionsPerUid"), "\(fifth.stderr)")
        // ... while daemon, another uid, is served.
        let other = try AccessTests.accountctl(as: Self.daemonUser, socket: daemon.socket, ["query", "--account", "daemon", "--json", "SELECT 1"])
        #expect(other.status == 0, "\(other.stderr)")
        #expect(daemon.log.contains("limits.maxConnectionsPerUid"))
    }
}
