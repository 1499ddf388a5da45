import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SPEC section 9 under systemd: the units, socket activation, `sd_notify` (READY, STATUS,
/// WATCHDOG, STOPPING) and SIGTERM during a migration.
@Suite struct SystemdTests {
    // MARK: - Units

    /// The units as `make install` writes them: `@BINDIR@` replaced by sed, here with the
    /// folder of the built binaries so that `ExecStart=` names a real program.
    static func installUnits(into folder: String, bindir: String = Binaries.directory) throws -> (service: String, socket: String) {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let service = folder + "/accountd.service"
        let sed = try runProgram("/bin/sed", ["s|@BINDIR@|\(bindir)|g", Repository.root + "/systemd/accountd.service.in"])
        try #require(sed.status == 0, "sed failed: \(sed.stderr)")
        try Files.write(sed.stdout, to: service)
        let socket = folder + "/accountd.socket"
        try FileManager.default.copyItem(atPath: Repository.root + "/systemd/accountd.socket", toPath: socket)
        // The varlink socket's unit, which the service names in Sockets=.
        try FileManager.default.copyItem(
            atPath: Repository.root + "/systemd/accountd-varlink.socket", toPath: folder + "/accountd-varlink.socket")
        return (service, socket)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), "needs /usr/bin/systemd-analyze"))
    func unitsPassSystemdAnalyzeVerify() throws {
        let dir = TestDirectory()
        let units = try Self.installUnits(into: dir.sub("units"))
        #expect(!(try String(contentsOfFile: units.service, encoding: .utf8)).contains("@BINDIR@"))
        let result = try runProgram("/usr/bin/systemd-analyze", ["verify", "--man=no", units.service, units.socket])
        #expect(result.stderr == "", "systemd-analyze verify complained:\n\(result.stderr)")
        #expect(result.status == 0)

        // The check has teeth: a unit whose ExecStart= names no program is reported.
        let broken = try Self.installUnits(into: dir.sub("broken"), bindir: dir.sub("no-such-bindir"))
        let refused = try runProgram("/usr/bin/systemd-analyze", ["verify", "--man=no", broken.service, broken.socket])
        #expect(refused.stderr.contains("no-such-bindir/accountd"), "\(refused.stderr)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), "needs /usr/bin/systemd-analyze"))
    func serviceExposureIsAtMostOne() throws {
        let dir = TestDirectory()
        let units = try Self.installUnits(into: dir.sub("units"))
        let result = try runProgram("/usr/bin/systemd-analyze", ["security", "--offline=true", "--no-pager", units.service])
        #expect(result.status == 0, "\(result.stderr)")
        let prefix = "Overall exposure level for accountd.service: "
        let line = try #require(
            (result.stdout + result.stderr).split(separator: "\n").first { $0.contains(prefix) },
            "no overall exposure line in:\n\(result.stdout)\n\(result.stderr)")
        let figure = line[line.range(of: prefix)!.upperBound...].prefix { $0.isNumber || $0 == "." }
        let exposure = try #require(Double(figure), "cannot read the exposure in: \(line)")
        #expect(exposure <= 1.0, "\(line)")
    }

    /// `accountd-litestream.service` as `make install` writes it (`@LITESTREAM@`, `@BINDIR@` replaced):
    /// it verifies beside accountd's units, and is hardened as far as a program that must reach
    /// the network can be (the network alone counts 0.8 of its exposure).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), "needs /usr/bin/systemd-analyze"))
    func theLitestreamUnitVerifiesAndIsHardened() throws {
        let dir = TestDirectory()
        let units = try Self.installUnits(into: dir.sub("units"))
        let litestream = dir.sub("units/accountd-litestream.service")
        // Any executable stands for litestream: verify checks that ExecStart= names one.
        let sed = try runProgram(
            "/bin/sed", ["-e", "s|@LITESTREAM@|\(Binaries.accountd)|g", "-e", "s|@BINDIR@|\(Binaries.directory)|g", Repository.root + "/systemd/accountd-litestream.service.in"])
        try #require(sed.status == 0, "sed failed: \(sed.stderr)")
        try Files.write(sed.stdout, to: litestream)
        let result = try runProgram("/usr/bin/systemd-analyze", ["verify", "--man=no", litestream, units.service, units.socket])
        #expect(result.stderr == "", "systemd-analyze verify complained:\n\(result.stderr)")
        let security = try runProgram("/usr/bin/systemd-analyze", ["security", "--offline=true", "--no-pager", litestream])
        let prefix = "Overall exposure level for accountd-litestream.service: "
        let line = try #require((security.stdout + security.stderr).split(separator: "\n").first { $0.contains(prefix) }, "\(security.stdout)")
        let exposure = try #require(Double(line[line.range(of: prefix)!.upperBound...].prefix { $0.isNumber || $0 == "." }))
        #expect(exposure <= 1.1, "\(line)")
        #expect(sed.stdout.contains("ExecStart=\(Binaries.accountd) replicate -config /run/accountd/litestream.yml -no-expand-env"))
        // Before Litestream: the reset of its local state when the replica changed (docs/REPLICATION.md).
        #expect(sed.stdout.contains("ExecStartPre=\(Binaries.accountd) prepare-litestream --litestream-config /run/accountd/litestream.yml"))
    }

    // MARK: - Socket activation

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate"), "needs /usr/bin/systemd-socket-activate"))
    func servesOnTheSocketItIsHandedAndLeavesItInPlace() throws {
        let dir = TestDirectory()
        let handed = dir.sub("activated.sock")
        let own = dir.sub("own.sock")
        let log = dir.sub("accountd.log")
        try Files.write("{}\n", to: dir.sub("none.yaml"))
        let notify = try DatagramReceiver(path: dir.sub("notify.sock"))
        defer { notify.close() }
        // systemd-socket-activate binds `handed`, waits for the first connection, then execs
        // accountd in its own process (so the pid stays) with LISTEN_FDS=1, LISTEN_PID and
        // LISTEN_FDNAMES; its children get only the variables given with -E.
        let process = try SystemdSupport.start(
            "/usr/bin/systemd-socket-activate",
            [
                "-l", handed, "--fdname=accountd.socket", "-E", "NOTIFY_SOCKET=\(notify.path)", "-E", "WATCHDOG_USEC=200000",
                Binaries.accountd, "--data-root", dir.sub("data"), "--socket", own, "--schema", Repository.sampleBundle,
                "--config", dir.sub("none.yaml"), "--log-level", "debug",
            ],
            environment: ["PATH": "/usr/bin:/bin"], log: log)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(waitUntil(timeout: 10) { SystemdSupport.identity(of: handed)?.isSocket == true }, "\(SystemdSupport.tail(log))")
        let before = try #require(SystemdSupport.identity(of: handed))

        // This connection wakes it up; the reply comes from accountd itself.
        let client = try RawClient(socket: handed)
        let ping = try client.callOne("ping")
        #expect(ping.error == nil)
        let info = try client.callOne("info")
        #expect(info.parameters["product"] == "accountd")
        #expect(info.parameters["pid"] == JSONValue(Int(process.processIdentifier)))
        let switched = try client.callOne("switch alice")
        #expect(switched.parameters["action"] == "created", "\(switched)")
        #expect(try RawClient(socket: handed).callOne("status").parameters["active"] == "alice")

        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text.contains("listening on the socket systemd passed (fd 3 'accountd.socket' at \(handed))"), "\(text)")
        #expect(!text.contains("listening on \(own)"))
        #expect(SystemdSupport.identity(of: own) == nil, "it bound --socket although it was handed one")

        // READY=1, and the watchdog fed (its check needs no connection to the handed socket).
        let pid = process.processIdentifier
        #expect(notify.wait { $0.contains { $0.assignments["READY"] == "1" && $0.pid == pid } }, "\(notify.datagrams.map(\.text))")
        #expect(
            notify.wait(timeout: 3) { $0.filter { $0.assignments["WATCHDOG"] == "1" && $0.pid == pid }.count >= 2 },
            "\(notify.datagrams.map(\.text)) \(SystemdSupport.tail(log))")

        let stopped = SystemdSupport.stop(process, timeout: 30)
        #expect(stopped.status == 0, "\(SystemdSupport.tail(log))")
        // systemd-socket-activate exec'd accountd, so nobody but accountd could have removed the
        // path: it is still there, the same socket file (systemd owns it: RemoveOnStop=yes).
        let after = SystemdSupport.identity(of: handed)
        #expect(after != nil, "accountd unlinked the socket path it was handed")
        #expect(after?.dev == before.dev && after?.ino == before.ino && after?.isSocket == true)
        // And nothing listens on it any more: the listening socket died with the daemon.
        #expect(SystemdSupport.connectError(handed) == ECONNREFUSED)
    }

    /// As `accountd.socket` and `accountd-varlink.socket` pass them: two sockets, the
    /// varlink one named `varlink`; each is adopted for its framing, and neither path of
    /// the daemon's own is bound.
    @Test(.enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate"),
        "needs /usr/bin/systemd-socket-activate"))
    func adoptsTheLineAndTheVarlinkSocketByName() throws {
        let dir = TestDirectory()
        let line = dir.sub("accountd.sock")
        let varlink = dir.sub("io.accountd")
        let log = dir.sub("accountd.log")
        try Files.write("{}\n", to: dir.sub("none.yaml"))
        let process = try SystemdSupport.start(
            "/usr/bin/systemd-socket-activate",
            [
                "-l", line, "-l", varlink, "--fdname=accountd.socket:varlink",
                Binaries.accountd, "--data-root", dir.sub("data"), "--socket", dir.sub("own.sock"),
                "--varlink-socket", dir.sub("own-varlink"), "--schema", Repository.sampleBundle, "--config", dir.sub("none.yaml"),
                "--log-level", "debug",
            ],
            environment: ["PATH": "/usr/bin:/bin"], log: log)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(waitUntil(timeout: 10) { SystemdSupport.identity(of: varlink)?.isSocket == true }, "\(SystemdSupport.tail(log))")

        // A connection to the line socket wakes it up.
        #expect(try RawClient(socket: line).callOne("ping").error == nil)
        // The two servers say so each in its own time: wait for both lines.
        let adopted = [
            "listening on the socket systemd passed (fd 4 'varlink' at \(varlink)) for varlink",
            "listening on the socket systemd passed (fd 3 'accountd.socket' at \(line))",
        ]
        #expect(
            waitUntil(timeout: 10) {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                return adopted.allSatisfy(text.contains)
            },
            "\(SystemdSupport.tail(log))")
        #expect(SystemdSupport.identity(of: dir.sub("own.sock")) == nil && SystemdSupport.identity(of: dir.sub("own-varlink")) == nil)
        #expect(SystemdSupport.stop(process, timeout: 30).status == 0, "\(SystemdSupport.tail(log))")
    }

    /// `LISTEN_PID` names another process: the sockets are not ours, so accountd binds its own.
    @Test func ignoresSocketsMeantForAnotherProcess() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path, environment: ["LISTEN_FDS": "1", "LISTEN_PID": "1", "LISTEN_FDNAMES": "x"])
        #expect(try daemon.client().callOne("ping").error == nil)
        #expect(daemon.log.contains("listening on \(daemon.socket)"))
        #expect(!daemon.log.contains("systemd passed"))
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    // MARK: - sd_notify

    /// READY=1 with STATUS once serving, STATUS while migrating and after a switch, STOPPING=1
    /// on SIGTERM; every message comes from the daemon's own pid.
    @Test func notifiesReadyStatusAndStopping() throws {
        let dir = TestDirectory()
        let notify = try DatagramReceiver(path: dir.sub("notify.sock"))
        defer { notify.close() }
        // bob exists at version 1 of the sample bundle, so switching to him migrates 2 steps.
        let old = try BundleFixture.truncate(Repository.sampleBundle, at: 1, into: dir.sub("v1"))
        try E2E.createOffline("bob", dataRoot: dir.sub("data"), bundle: old)

        let daemon = try DaemonProcess(directory: dir.path, environment: ["NOTIFY_SOCKET": notify.path])
        let pid = daemon.process.processIdentifier
        // The harness waited for ping, so READY=1 may already be queued: read it now.
        #expect(notify.wait { $0.contains { $0.assignments["READY"] == "1" } }, "no READY=1: \(notify.datagrams.map(\.text))")
        let ready = try #require(notify.datagrams.first { $0.assignments["READY"] == "1" })
        #expect(ready.pid == pid, "READY=1 from pid \(ready.pid.map(String.init) ?? "?"), the daemon is \(pid)")
        #expect(ready.assignments["STATUS"] == "serving; no active account")

        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        #expect(notify.wait { $0.contains { $0.assignments["STATUS"] == "serving; active account alice" } })

        #expect(try client.callOne("switch bob").parameters["action"] == "migrated")
        #expect(notify.wait { $0.contains { $0.assignments["STATUS"] == "serving; active account bob" } })
        let statuses = notify.datagrams.compactMap { $0.assignments["STATUS"] }
        let migrating = statuses.filter { $0.hasPrefix("migrating") }
        #expect(migrating == ["migrating bob 1/2", "migrating bob 2/2"], "\(statuses)")
        if let lastStep = statuses.firstIndex(of: "migrating bob 2/2"), let served = statuses.firstIndex(of: "serving; active account bob") {
            #expect(lastStep < served, "\(statuses)")
        }
        #expect(!notify.datagrams.contains { $0.assignments["WATCHDOG"] != nil }, "WATCHDOG=1 without WATCHDOG_USEC")

        #expect(E2E.stop(daemon, timeout: 30) == 0)
        #expect(notify.wait(timeout: 5) { $0.contains { $0.assignments["STOPPING"] == "1" } }, "no STOPPING=1")
        let stopping = try #require(notify.datagrams.first { $0.assignments["STOPPING"] == "1" })
        #expect(stopping.pid == pid)
        #expect(notify.datagrams.allSatisfy { $0.pid == pid }, "\(notify.datagrams.map { ($0.pid, $0.text) })")
        #expect(notify.datagrams.allSatisfy { $0.uid == getuid() })

        // After a restart, ready means the saved active account is open again.
        let seen = notify.datagrams.count
        try daemon.restart()
        let again = daemon.process.processIdentifier
        #expect(notify.wait { $0.dropFirst(seen).contains { $0.assignments["READY"] == "1" } })
        let readyAgain = notify.datagrams.dropFirst(seen).first { $0.assignments["READY"] == "1" }
        #expect(readyAgain?.pid == again)
        #expect(readyAgain?.assignments["STATUS"] == "serving; active account bob")
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    /// With WATCHDOG_USEC=200000 the daemon proves itself every 100 ms.
    @Test func feedsTheWatchdog() throws {
        let dir = TestDirectory()
        let notify = try DatagramReceiver(path: dir.sub("notify.sock"))
        defer { notify.close() }
        let daemon = try DaemonProcess(directory: dir.path, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000"])
        let pid = daemon.process.processIdentifier
        let start = Date()
        let fed = notify.wait(timeout: 1.5) { $0.filter { $0.assignments["WATCHDOG"] == "1" }.count >= 3 }
        let kicks = notify.datagrams.filter { $0.assignments["WATCHDOG"] == "1" }
        #expect(fed, "\(kicks.count) WATCHDOG=1 in \(Date().timeIntervalSince(start)) s: \(notify.datagrams.map(\.text))")
        #expect(kicks.allSatisfy { $0.pid == pid }, "\(kicks.map(\.pid))")
        #expect(daemon.log.contains("systemd watchdog on"))
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    /// WATCHDOG_PID names another process: the watchdog is not ours to feed.
    @Test func leavesAnotherProcesssWatchdogAlone() throws {
        let dir = TestDirectory()
        let notify = try DatagramReceiver(path: dir.sub("notify.sock"))
        defer { notify.close() }
        let daemon = try DaemonProcess(
            directory: dir.path,
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": String(getpid())])
        #expect(notify.wait { $0.contains { $0.assignments["READY"] == "1" } })
        // Nothing must come: an absence can only be watched for a while (five watchdog intervals).
        Thread.sleep(forTimeInterval: 1.0)
        #expect(!notify.datagrams.contains { $0.assignments["WATCHDOG"] != nil }, "\(notify.datagrams.map(\.text))")
        #expect(!daemon.log.contains("systemd watchdog on"))
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    // MARK: - SIGTERM during a migration


    /// systemd waits TimeoutStopSec (120 s in the unit) before SIGKILL. RestartTests checks the
    /// file and the replies in depth; here: the watchdog fed during the migration, STOPPING=1,
    /// exit 0 well within 30 s, a sound file.
    @Test func sigtermDuringAMigrationStopsWithinThirtySeconds() throws {
        let dir = TestDirectory()
        let notify = try DatagramReceiver(path: dir.sub("notify.sock"))
        defer { notify.close() }
        let (bundle2, path, before) = try RestartTests.prepareSlowMigration(in: dir)
        let checksum = RestartTests.checksum

        let daemon = try DaemonProcess(
            directory: dir.path, bundle: bundle2, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000"])
        let pid = daemon.process.processIdentifier
        let connections = try RestartTests.switchUntilMigrating(daemon)
        #expect(notify.wait(timeout: 5) { $0.contains { $0.assignments["STATUS"] == "migrating bob 1/1" } }, "\(notify.datagrams.map(\.text))")
        // The watchdog is fed while the migration runs: its check does not wait for it.
        // (A migration longer than WatchdogSec must not get the daemon killed.)
        let kicksDuringMigration: () -> Int = {
            let datagrams = notify.datagrams
            guard let start = datagrams.first(where: { $0.assignments["STATUS"] == "migrating bob 1/1" })?.received else { return 0 }
            let end = datagrams.first { $0.assignments["STATUS"] == "serving; active account bob" }?.received ?? .distantFuture
            return datagrams.filter { $0.assignments["WATCHDOG"] == "1" && $0.pid == pid && $0.received > start && $0.received < end }.count
        }
        let fed = waitUntil(timeout: 5) { kicksDuringMigration() >= 2 }
        #expect(fed, "\(kicksDuringMigration()) WATCHDOG=1 during the migration: \(notify.datagrams.map(\.text))")

        let stopped = withExtendedLifetime(connections) { SystemdSupport.stop(daemon.process, timeout: 30) }
        #expect(stopped.status == 0, "exit \(stopped.status.map(String.init) ?? "none: still running after 30 s") \(daemon.log.suffix(2000))")
        #expect(stopped.seconds < 30)
        #expect(notify.wait(timeout: 2) { $0.contains { $0.assignments["STOPPING"] == "1" && $0.pid == pid } }, "no STOPPING=1")

        let version = try E2E.userVersion(path)
        #expect(version == 1 || version == 2)
        #expect(try E2E.sql(path, "PRAGMA integrity_check;") == "ok")
        #expect(try E2E.sql(path, checksum) == before)
    }
}
