import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Each caller uid gets a fair share (hostile31 F2): one person's slow statements take at
/// most `limits.statementsPerUid` of the blocking pool's threads, and one person's idle
/// connections at most `limits.maxConnectionsPerUid` of `limits.maxConnections`, so another
/// person is still answered at once. With three real non-root uids: `nobody` (65534),
/// `daemon` (1) and `bin` (2), each granted write on the account named like it.
@Suite(.enabled(
    if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && getpwnam("nobody")?.pointee.pw_uid == 65534
        && getpwnam("daemon")?.pointee.pw_uid == 1 && getpwnam("bin")?.pointee.pw_uid == 2,
    "needs root, setpriv, and the users nobody (65534), daemon (1) and bin (2)"))
struct FairShareTests {
    static let nobody = 65534
    static let daemonUser = 1
    static let binUser = 2

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
                - { user: "2", accounts: "$user", access: write }
            """, to: config)
        let daemon = try E2E.spawning { try DaemonProcess(directory: dir.path, arguments: ["--config", config]) }
        for account in ["nobody", "daemon", "bin"] {
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

    /// hostile31d F2: two uids, each at its share with statements inside one long call of an
    /// SQL function (which no timeout interrupts), leave a thread for a third uid's first
    /// statement: it is answered while every one of theirs still runs.
    @Test func twoUidsAtTheirShareLeaveAThreadForAThirdUid() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemon(dir, limits: "  queryTimeoutMs: 60000\n  maxConnections: 128")
        // One step of some seconds: instr() over 4 MB of text, a needle of 200 KB it never matches.
        let long = "SELECT instr(hex(zeroblob(2000000)), substr(hex(zeroblob(2000000)), 1, 200000) || '1')"
        var hogs: [Process] = []
        defer { Self.stopAll(hogs) }
        for _ in 0..<8 {
            hogs.append(try Self.start(as: Self.nobody, daemon, ["query", "--account", "nobody", long]))
            hogs.append(try Self.start(as: Self.daemonUser, daemon, ["query", "--account", "daemon", long]))
        }
        Thread.sleep(forTimeInterval: 2)
        let answered = try AccessTests.accountctl(as: Self.binUser, socket: daemon.socket, ["query", "--account", "bin", "--json", "SELECT 1"])
        #expect(answered.status == 0, "\(answered.stderr)")
        // Answered while every statement of the two others still ran (none had ended to free a thread).
        #expect(hogs.allSatisfy { $0.isRunning }, "bin was answered only once one of the others' statements had ended")
    }

    /// hostile31d F4: two uids each holding all the connections their share allows leave
    /// some for a third uid; the second uid's connections beyond its first few are refused,
    /// naming the reserve.
    @Test func twoUidsAtTheirShareOfConnectionsLeaveSomeForAThird() throws {
        let dir = TestDirectory()
        // 16 connections in all, 8 per uid, the last 2 for uids with fewer than 4 open.
        let daemon = try Self.daemon(dir, limits: "  maxConnections: 16")
        var watchers: [Process] = []
        defer { Self.stopAll(watchers) }
        for _ in 0..<8 { watchers.append(try Self.start(as: Self.nobody, daemon, ["watch"])) }
        #expect(waitUntil(timeout: 30, interval: 0.1) { Self.open(daemon) >= 8 }, "nobody's 8 watchers connected")
        // daemon's first 6 connect; its 7th and 8th are refused: only the reserve is left, and it has 6 open.
        for _ in 0..<8 { watchers.append(try Self.start(as: Self.daemonUser, daemon, ["watch"])) }
        #expect(waitUntil(timeout: 30, interval: 0.1) { watchers.filter(\.isRunning).count == 14 }, "two of daemon's watchers refused")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(Self.open(daemon) == 14, "14 watchers connected")
        let ninth = try AccessTests.accountctl(as: Self.daemonUser, socket: daemon.socket, ["ping"])
        #expect(ninth.status != 0)
        #expect(ninth.stderr.contains("TooManyConnections") && ninth.stderr.contains("fewer than 4"), "\(ninth.stderr)")
        // bin, with none open, is served.
        let other = try AccessTests.accountctl(as: Self.binUser, socket: daemon.socket, ["query", "--account", "bin", "--json", "SELECT 1"])
        #expect(other.status == 0, "\(other.stderr)")
    }

    /// How many connections the daemon has open, by its metrics (root's own connection included).
    static func open(_ daemon: DaemonProcess) -> Int {
        guard let metrics = try? E2E.accountctl(["metrics"], socket: daemon.socket), metrics.status == 0 else { return 0 }
        for line in metrics.stdout.split(separator: "\n") where line.hasPrefix("accountd_connections_open ") {
            return Int(Double(line.split(separator: " ")[1]) ?? 0) - 1
        }
        return 0
    }

    /// hostile31e G1: an `Execute` that waited its turn behind its uid's statements while a
    /// reload revoked the uid's write grant is refused when its turn comes, and writes nothing.
    @Test func anExecuteWaitingItsTurnWhenItsGrantIsRevokedWritesNothing() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemon(dir, limits: "  queryTimeoutMs: 4000\n  statementsPerUid: 1")
        let forever = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
        let hog = try Self.start(as: Self.nobody, daemon, ["query", "--account", "nobody", forever])
        defer { Self.stopAll([hog]) }
        Thread.sleep(forTimeInterval: 1)
        let result = E2E.Locked<(status: Int32, stdout: String, stderr: String)?>(nil)
        let socket = daemon.socket
        let waiting = Thread {
            let insert = "INSERT INTO app_data(key, value) VALUES ('late', 'written after the revocation')"
            result.withLock { $0 = try? AccessTests.accountctl(as: Self.nobody, socket: socket, ["exec", "--account", "nobody", insert]) }
        }
        waiting.start()
        Thread.sleep(forTimeInterval: 0.5)
        // The reload takes nobody's grant away while its Execute waits behind its Query.
        let config = dir.sub("fair.yaml")
        let text = try String(contentsOfFile: config, encoding: .utf8)
        try Files.write(text.split(separator: "\n").filter { !$0.contains("user: nobody") }.joined(separator: "\n") + "\n", to: config)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("reload") && daemon.log.contains("now in force") }, "\(daemon.log.suffix(1500))")
        #expect(hog.isRunning, "the Query ended before the reload: the Execute did not wait")
        #expect(waitUntil(timeout: 30, interval: 0.1) { result.current != nil }, "the Execute was not answered")
        let answered = try #require(result.current)
        #expect(answered.status != 0 && answered.stderr.contains("PermissionDenied"), "\(answered.stdout) \(answered.stderr)")
        let rows = try E2E.accountctl(["query", "--account", "nobody", "--json", "SELECT count(*) FROM app_data WHERE key = 'late'"], socket: daemon.socket)
        #expect(rows.stdout.contains("[[0]]"), "\(rows.stdout) \(rows.stderr)")
    }
}
