import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Logging to the journal: when `JOURNAL_STREAM` names stderr, accountd sends structured
/// entries in the journal's native protocol to `/run/systemd/journal/socket`.
///
/// These tests stand in for journald with a socket of their own at that path, so they run only
/// where no journal socket exists (no journald: a container whose PID 1 is not systemd); they
/// never touch a real journald. They share that one path, hence `.serialized`. Entries are told
/// apart by the sender's pid (SCM_CREDENTIALS).
///
/// `JournalLogHandler.fields(level:message:metadata:identifier:)` and `priority(_:)` have no unit
/// test here: EndToEndTests does not depend on AccountdDaemon (and the test bundle does not link
/// it), so the live entries below are what checks them: MESSAGE, PRIORITY for every level the
/// daemon uses (2 critical, 3 error, 4 warning, 5 notice, 6 info, 7 debug), SYSLOG_IDENTIFIER,
/// the metadata fields, and a multi-line value (the protocol's length-prefixed form).
@Suite(.serialized, .enabled(if: getuid() == 0, "binds /run/systemd/journal/socket: needs root"))
struct JournalTests {
    /// Starts a stand-in journal, or skips the test, saying why.
    static func journal() throws -> FakeJournal {
        guard let journal = try FakeJournal.start() else {
            // A journal socket exists (a real journald, or another run's stand-in): never touch it.
            try Test.cancel("\(FakeJournal.socketPath) exists (a real journald, or another run's stand-in); live journal checks skipped")
        }
        return journal
    }

    /// The daemon's stderr is a file whose device and inode are in JOURNAL_STREAM, as systemd
    /// sets it for `StandardError=journal`.
    static func startDaemon(in dir: borrowing TestDirectory, bundle: String = Repository.sampleBundle, environment: [String: String] = [:]) throws -> DaemonProcess {
        let log = dir.sub("accountd.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        var env = environment
        env["JOURNAL_STREAM"] = try SystemdSupport.journalStream(of: log)
        return try DaemonProcess(directory: dir.path, bundle: bundle, environment: env)
    }

    @Test func entriesCarryPriorityMessageAndStructuredFields() throws {
        let journal = try Self.journal()
        defer { journal.stop() }
        let dir = TestDirectory()
        // uid 65534 must reach the socket: a searchable folder and a 0666 socket.
        #expect(chmod(dir.path, 0o755) == 0)
        let bundle = try BundleFixture.truncate(Repository.sampleBundle, at: 3, into: dir.sub("bundle"))
        try FileManager.default.copyItem(atPath: Repository.sampleBundle + "/schema.sql", toPath: bundle + "/schema.sql")
        let old = try BundleFixture.truncate(Repository.sampleBundle, at: 1, into: dir.sub("v1"))
        try E2E.createOffline("carol", dataRoot: dir.sub("data"), bundle: old)

        let secret = "sentinel-\(UUID().uuidString)"
        let daemon = try Self.startDaemon(in: dir, bundle: bundle, environment: ["ACCOUNTD_SOCKET_MODE": "0666", "API_TOKEN": secret])
        let pid = daemon.process.processIdentifier
        let client = try daemon.client()

        let ready = journal.waitForEntry(from: pid) { $0.message.contains(" ready: ") }
        #expect(ready?.priority == 5, "\(String(describing: ready))")

        // notice: an account created.
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        let created = journal.waitForEntry(from: pid) { $0.message.contains("account alice created") }
        #expect(created?.priority == 5, "\(String(describing: created))")
        #expect(created?["ACCOUNT"] == "alice")
        #expect(created?["SYSLOG_IDENTIFIER"] == "accountd")

        // notice: a migration, with where it came from and went to.
        #expect(try client.callOne("switch carol").parameters["action"] == "migrated")
        let migrated = journal.waitForEntry(from: pid) { $0.message.contains("account carol migrated") }
        #expect(migrated?.priority == 5, "\(String(describing: migrated))")
        #expect(migrated?["ACCOUNT"] == "carol")
        #expect(migrated?["MIGRATION_FROM"] == "1")
        #expect(migrated?["MIGRATION_TO"] == "3")

        // info: a plain switch to an existing account.
        #expect(try client.callOne("switch alice").parameters["action"] == "opened")
        let opened = journal.waitForEntry(from: pid) { $0.message.contains("switched to account alice") }
        #expect(opened?.priority == 6, "\(String(describing: opened))")
        #expect(opened?["ACCOUNT"] == "alice")

        // warning: a refused admin request names the peer's uid.
        let refused = try SystemdSupport.run(asUID: 65534, Binaries.accountctl, ["--socket", daemon.socket, "switch", "carol"])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("PermissionDenied"), "\(refused.stderr)")
        let refusal = journal.waitForEntry(from: pid) { $0["PEER_UID"] != nil && $0.message.contains("refused") }
        #expect(refusal?["PEER_UID"] == "65534", "\(String(describing: refusal))")
        #expect(refusal?.priority == 4)

        // error: a reload that finds a broken bundle carries the error as a field.
        try Files.write("CREATE TABLE gap (id INTEGER PRIMARY KEY);\n", to: bundle + "/migrations/0005_gap.sql")
        kill(pid, SIGHUP)
        let failed = journal.waitForEntry(from: pid) { $0["ERROR"] != nil }
        #expect(failed?.priority == 3, "\(String(describing: failed))")
        #expect(failed?["ERROR"]?.contains("0005_gap.sql") == true, "\(String(describing: failed))")
        #expect(failed?.message.contains("still serving bundle version 3") == true)
        #expect(try client.callOne("status").parameters["bundleVersion"] == 3)

        // A multi-line error (schema.sql and the migrations disagree) travels whole.
        try FileManager.default.removeItem(atPath: bundle + "/migrations/0005_gap.sql")
        try Files.write("CREATE INDEX user_name ON user_info(user_name);\n", to: bundle + "/migrations/0004_index.sql")
        kill(pid, SIGHUP)
        let differs = journal.waitForEntry(from: pid) { $0["ERROR"]?.contains("0004_index.sql") == true }
        #expect(differs?["ERROR"]?.contains("\n") == true, "\(String(describing: differs))")
        #expect(differs?.message.contains("\n") == true)
        #expect(differs?.message.hasSuffix("still serving bundle version 3 from \(bundle)") == true, "\(String(describing: differs))")

        #expect(E2E.stop(daemon, timeout: 30) == 0)
        let stopped = journal.waitForEntry(from: pid, timeout: 5) { $0.message == "accountd stopped" }
        #expect(stopped?.priority == 5)

        // Every entry is well formed, and nothing went to stderr instead.
        let entries = journal.entries(from: pid)
        #expect(entries.count >= 8)
        for entry in entries {
            #expect(entry["MESSAGE"] != nil, "\(entry)")
            #expect(entry["SYSLOG_IDENTIFIER"] == "accountd", "\(entry)")
            #expect(entry.priority.map { (0...7).contains($0) } == true, "\(entry)")
            #expect(entry.fields.allSatisfy { !$0.name.hasPrefix("_") && $0.name.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" } }, "\(entry)")
        }
        #expect(!daemon.log.contains("ready"), "log lines went to stderr: \(daemon.log.suffix(1000))")
        // Every level the daemon uses maps to its syslog priority (7: ServiceLifecycle's debug lines).
        #expect(Set(entries.compactMap(\.priority)).isSuperset(of: [3, 4, 5, 6, 7]), "\(Set(entries.compactMap(\.priority)))")

        // The process environment (which may hold secrets) is no business of the journal.
        let leaks = entries.filter { $0.fields.contains { $0.value.contains(secret) } }
        #expect(leaks.isEmpty, "entries carrying the environment, e.g. \(leaks.first.map { String($0.description.prefix(200)) } ?? "")")
    }

    /// A daemon that cannot start says so at priority 2 (critical).
    @Test func aFailedStartIsCritical() throws {
        let journal = try Self.journal()
        defer { journal.stop() }
        let dir = TestDirectory()
        let broken = try BundleFixture.write(at: dir.sub("broken"), steps: ["BEGIN;\nCREATE TABLE t (id INTEGER PRIMARY KEY);\nCOMMIT;\n"])
        let log = dir.sub("accountd.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        try Files.write("{}\n", to: dir.sub("none.yaml"))
        let process = try SystemdSupport.start(
            Binaries.accountd,
            ["--data-root", dir.sub("data"), "--socket", dir.sub("accountd.sock"), "--schema", broken, "--config", dir.sub("none.yaml")],
            environment: ["PATH": "/usr/bin:/bin", "JOURNAL_STREAM": try SystemdSupport.journalStream(of: log)], log: log)
        let pid = process.processIdentifier
        #expect(waitUntil(timeout: 30) { !process.isRunning })
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
        #expect(process.terminationStatus == 1, "\(SystemdSupport.tail(log))")
        let entry = journal.waitForEntry(from: pid, timeout: 2) { $0.message.contains("cannot start") }
        #expect(entry?.priority == 2, "\(journal.entries(from: pid))")
        #expect(entry?.message.contains("0001_step1.sql") == true, "\(String(describing: entry))")
    }

    /// JOURNAL_STREAM that does not name stderr (stderr redirected since): plain lines on stderr.
    @Test func aStaleJournalStreamLogsToStderr() throws {
        let journal = try Self.journal()
        defer { journal.stop() }
        let dir = TestDirectory()
        let other = dir.sub("elsewhere.log")
        _ = FileManager.default.createFile(atPath: other, contents: nil)
        let daemon = try DaemonProcess(directory: dir.path, environment: ["JOURNAL_STREAM": try SystemdSupport.journalStream(of: other)])
        #expect(try daemon.client().callOne("switch alice").error == nil)
        #expect(waitUntil(timeout: 5) { daemon.log.contains("account alice created") }, "\(daemon.log)")
        #expect(E2E.stop(daemon, timeout: 30) == 0)
        #expect(journal.entries(from: daemon.process.processIdentifier).isEmpty)
    }
}
