import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `Status` tells the truth about the active account (after a failed migration, a restore
/// whose reopen fails, a bundle rollback, a reload during a switch, a start-up that waits
/// for a file), `Watch` hears of failures, failures are logged, retries take no new
/// snapshot, and `Verify` does not call an outdated account unhealthy: issue 29's findings
/// 10, 16, 17, 18, 20, 27, 28 and 29, each reproduced against the real daemon.
@Suite struct HonestStatusTests {
    /// A migration that fails on an account whose `user_info` has two rows named Ann.
    static let uniqueNames = "CREATE UNIQUE INDEX user_name_unique ON user_info(user_name);\n"

    /// Writes migration `number` into `bundle`.
    static func add(_ number: Int, _ sql: String, to bundle: String) throws {
        try Files.write(sql, to: bundle + String(format: "/migrations/%04d_step%d.sql", number, number))
    }

    /// Sends SIGHUP and waits until the daemon serves bundle `version`.
    static func reload(_ daemon: DaemonProcess, to version: Int) throws {
        kill(daemon.process.processIdentifier, SIGHUP)
        let served = waitUntil(timeout: 20) { (try? daemon.client().callOne("status"))?.parameters["bundleVersion"] == JSONValue(version) }
        try #require(served, "the reload to version \(version) did not happen: \(daemon.log.suffix(2000))")
    }

    /// The log lines that contain every one of `words`.
    static func lines(_ daemon: DaemonProcess, containing words: [String]) -> [Substring] {
        daemon.log.split(separator: "\n").filter { line in words.allSatisfy { line.contains($0) } }
    }

    /// Finding 16 (and 27): after the active account's migration fails, `Status` says
    /// `failed` with the error and the version the file stayed at; `Watch` gets a `failed`
    /// event; the failed Migrate and Switch each leave a log line naming the account, the
    /// operation and the error; a later successful switch makes it `ready` again.
    @Test func aFailedMigrationOfTheActiveAccountIsFailedNotReady() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: E2E.sampleSteps)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch alice").parameters["version"] == 3)
        try E2E.sql(daemon.accountPath("alice"), "INSERT INTO user_info(user_id, user_name) VALUES (1, 'Ann'), (2, 'Ann');")
        let watcher = try WatchTests.watcher(daemon)
        watcher.setReceiveTimeout(20)

        try Self.add(4, Self.uniqueNames, to: bundle)
        try Self.reload(daemon, to: 4)
        #expect(waitUntil(timeout: 20) { (try? client.callOne("status"))?.parameters["state"] == "failed" }, "\(daemon.log.suffix(2000))")
        let status = try client.callOne("status")
        #expect(status.parameters["active"] == "alice")
        #expect(status.parameters["state"] == "failed", "\(status)")
        #expect(status.parameters["version"] == 3)
        #expect(status.parameters["bundleVersion"] == 4)
        #expect(status.parameters["problem"]?.stringValue?.contains("UNIQUE") == true, "\(status)")
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 3)

        // Watch: the step, then the failure.
        var failed: Reply?
        while failed == nil, let reply = try? watcher.readReply() {
            if reply.parameters["event"] == "failed" { failed = reply }
        }
        #expect(failed?.parameters["account"] == "alice", "no failed event: \(String(describing: failed))")
        #expect(failed?.parameters["error"] == "io.accountd.MigrationFailed")
        #expect(failed?.parameters["version"] == 3)

        // Finding 27: the failures of Migrate and Switch are logged.
        #expect(try client.callOne("migrate alice").parameters["failed"] == 1)
        #expect(try client.callOne("switch alice").error == .migrationFailed)
        #expect(try client.callOne("status").parameters["state"] == "failed")
        for operation in ["Migrate", "Switch"] {
            let logged = waitUntil(timeout: 5) {
                !Self.lines(daemon, containing: ["operation=\(operation)", "account=alice", "io.accountd.MigrationFailed"]).isEmpty
            }
            #expect(logged, "no log line for the failed \(operation): \(daemon.log.suffix(3000))")
        }

        // Once the data allows it, a switch migrates and the state is ready again.
        try E2E.sql(daemon.accountPath("alice"), "DELETE FROM user_info WHERE user_id = 2;")
        #expect(try client.callOne("switch alice").parameters["action"] == "migrated")
        let ready = try client.callOne("status")
        #expect(ready.parameters["state"] == "ready")
        #expect(ready.parameters["version"] == 4)
        #expect(ready.parameters["problem"] == nil)
    }

    /// Finding 10: restoring the active account from a snapshot that the newer migration
    /// fails on replies with what was done (restored, reopen failed, the file's version), and
    /// `Status` says `failed` at the restored file's version, as `status ACCOUNT` does.
    @Test func aRestoreWhoseReopenFailsSaysSo() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [E2E.sampleSteps[0]])
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch alice").parameters["version"] == 1)
        try E2E.sql(daemon.accountPath("alice"), "INSERT INTO user_info(user_id, user_name) VALUES (1, 'Ann'), (2, 'Ann');")
        let snapshot = try #require(try client.callOne("snapshot alice").parameters["snapshot"]?.stringValue)
        try E2E.sql(daemon.accountPath("alice"), "DELETE FROM user_info WHERE user_id = 2;")
        try Self.add(2, Self.uniqueNames, to: bundle)
        try Self.reload(daemon, to: 2)
        #expect(waitUntil(timeout: 20) { (try? client.callOne("status"))?.parameters["version"] == 2 }, "\(daemon.log.suffix(2000))")

        let restore = try client.callOne("restore alice \(snapshot)")
        #expect(restore.error == nil, "the restore replaced the file, yet answered an error: \(restore)")
        #expect(restore.parameters["reopened"] == "failed", "\(restore)")
        #expect(restore.parameters["version"] == 1)
        #expect(restore.parameters["problem"]?.stringValue?.contains("UNIQUE") == true, "\(restore)")
        #expect(restore.parameters["saved"]?["snapshot"] != nil)
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 1)

        let status = try client.callOne("status")
        #expect(status.parameters["active"] == "alice")
        #expect(status.parameters["state"] == "failed", "\(status)")
        #expect(status.parameters["version"] == 1, "the status claims a version alice's file does not have: \(status)")
        let alice = try client.callOne("status alice")
        #expect(alice.parameters["state"] == "outdated")
        #expect(alice.parameters["version"] == 1)

        // accountctl says so, and exits non-zero.
        let again = try E2E.accountctl(["restore", "alice", snapshot], socket: daemon.socket)
        #expect(again.status != 0)
        #expect(again.stdout.contains("could not be brought to the bundle"), "\(again.stdout)")
    }

    /// Finding 17: retrying a migration that fails on an unchanged file reuses the first
    /// attempt's snapshot, so the older snapshots stay.
    @Test func retriesOfAFailedMigrationTakeNoNewSnapshot() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: E2E.sampleSteps)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne("switch bob").error == nil)
        try E2E.sql(daemon.accountPath("alice"), "INSERT INTO user_info(user_id, user_name) VALUES (1, 'Ann'), (2, 'Ann');")
        for label in ["one", "two", "three"] { #expect(try client.callOne("snapshot alice \(label)").error == nil) }
        try Self.add(4, Self.uniqueNames, to: bundle)
        try Self.reload(daemon, to: 4)

        #expect(try client.callOne("switch alice").error == .migrationFailed)
        let afterFirst = try AccountLifecycleTests.snapshots("alice", socket: daemon.socket).compactMap { $0["snapshot"]?.stringValue }
        #expect(afterFirst.count == 4, "\(afterFirst)")
        #expect(afterFirst.filter { $0.hasSuffix("-v3-before-migrate") }.count == 1, "\(afterFirst)")
        for _ in 0..<3 {
            #expect(try client.callOne("switch alice").error == .migrationFailed)
            #expect(try client.callOne("migrate alice").parameters["failed"] == 1)
        }
        let afterRetries = try AccountLifecycleTests.snapshots("alice", socket: daemon.socket).compactMap { $0["snapshot"]?.stringValue }
        #expect(afterRetries == afterFirst, "the retries changed the snapshots: \(afterFirst) -> \(afterRetries)")

        // A changed file is a new state: the next failure snapshots it.
        try E2E.sql(daemon.accountPath("alice"), "INSERT INTO user_info(user_id, user_name) VALUES (3, 'Bo');")
        #expect(try client.callOne("switch alice").error == .migrationFailed)
        let afterChange = try AccountLifecycleTests.snapshots("alice", socket: daemon.socket).compactMap { $0["snapshot"]?.stringValue }
        #expect(afterChange.count == 5, "\(afterChange)")
        #expect(afterChange.filter { $0.hasSuffix("-v3-before-migrate") }.count == 2, "\(afterChange)")
    }

    /// Finding 18: with an app holding a write transaction on the saved active account, the
    /// daemon listens at once, says `opening`, and brings the account up (migrating it) once
    /// the app lets go.
    @Test func startUpListensAtOnceWhileAnAppHoldsTheSavedAccount() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: Array(E2E.sampleSteps.prefix(2)))
        let first = try E2E.daemon(directory: dir.path, bundle: bundle)
        #expect(try first.client().callOne("switch alice").parameters["version"] == 2)
        #expect(E2E.stop(first) == 0)
        try Self.add(3, E2E.sampleSteps[2], to: bundle)

        let release = try Hostile.holdWriteLock(first.accountPath("alice"))
        var released = false
        defer { if !released { release() } }
        let started = Date()
        let daemon = try E2E.spawning { try DaemonProcess(directory: dir.path, bundle: bundle, waitForSavedAccount: false) }
        defer { _ = E2E.stop(daemon) }
        let listening = Date().timeIntervalSince(started)
        #expect(listening < 5, "the daemon took \(listening) s to answer while the saved account was held")
        let client = try Hostile.client(daemon.socket, timeout: 30)
        let opening = try client.callOne("status")
        #expect(opening.parameters["state"] == "opening", "\(opening)")
        #expect(opening.parameters["active"] == .null)

        release()
        released = true
        let up = waitUntil(timeout: 60) { (try? client.callOne("status"))?.parameters["state"] == "ready" }
        #expect(up, "\(daemon.log.suffix(3000))")
        let status = try client.callOne("status")
        #expect(status.parameters["active"] == "alice")
        #expect(status.parameters["version"] == 3)
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 3)
    }

    /// Finding 20: a reload that lands while `switch alice` migrates her brings alice to the
    /// new bundle before the switch replies.
    @Test func aReloadDuringASwitchBringsTheAccountToTheNewBundle() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [E2E.sampleSteps[0]])
        try E2E.createOffline("alice", dataRoot: dir.sub("data"), bundle: bundle)
        // A step long enough for a reload to land while it runs.
        try Self.add(2, "CREATE TABLE slow AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000000) SELECT x FROM c;\n", to: bundle)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let switcher = try Hostile.client(daemon.socket, timeout: 120)
        try switcher.send(#"{"method":"io.accountd.Switch","parameters":{"account":"alice"},"more":true}"# + "\n")
        let step = try switcher.readReply()
        #expect(step.parameters["step"] == 1, "\(step)")
        try Self.add(3, E2E.sampleSteps[1], to: bundle)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 20) { daemon.log.contains("reload: now serving bundle version 3") })

        var reply = try switcher.readReply()
        while reply.continues { reply = try switcher.readReply() }
        #expect(reply.error == nil, "\(reply)")
        // The reload landed during the switch when the new bundle was served before alice was
        // committed: the switch itself then brought her to version 3 before replying. (Had it
        // landed just after, the reload brings her there itself.)
        let log = daemon.log
        let reloaded = log.range(of: "reload: now serving bundle version 3")
        let committed = log.range(of: "account alice migrated from version 1 to 2")
        let landedDuring = reloaded != nil && committed != nil && reloaded!.lowerBound < committed!.lowerBound
        print("HonestStatusTests: the reload landed \(landedDuring ? "during" : "after") the switch")
        if landedDuring { #expect(reply.parameters["version"] == 3, "\(reply) \(log.suffix(3000))") }
        let settled = waitUntil(timeout: 30) {
            let status = (try? switcher.callOne("status"))?.parameters
            return status?["version"] == 3 && status?["state"] == "ready"
        }
        #expect(settled, "alice was left below the bundle: \(String(describing: try? switcher.callOne("status"))) \(daemon.log.suffix(3000))")
        let status = try switcher.callOne("status")
        #expect(status.parameters["active"] == "alice")
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 3)
    }

    /// Finding 29: after a rollback to an older bundle, an active account too new for it is
    /// `too_new`, as the preference calls on it (`AccountTooNew`) say.
    @Test func statusSaysTooNewAfterABundleRollback() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: E2E.sampleSteps)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch alice").parameters["version"] == 3)
        #expect(try client.callOne(#"set user theme "dark""#).error == nil)
        try FileManager.default.removeItem(atPath: bundle + "/migrations/0003_step3.sql")
        try Self.reload(daemon, to: 2)

        #expect(waitUntil(timeout: 20) { (try? client.callOne("status"))?.parameters["state"] == "too_new" }, "\(daemon.log.suffix(2000))")
        let status = try client.callOne("status")
        #expect(status.parameters["active"] == "alice")
        #expect(status.parameters["version"] == 3)
        #expect(status.parameters["bundleVersion"] == 2)
        #expect(status.parameters["problem"]?.stringValue?.contains("newer") == true, "\(status)")
        #expect(try client.callOne("get user theme").error == .accountTooNew)
    }

    /// Finding 28: `verify` of an outdated account does not compare its schema with the
    /// bundle's target, says so, and does not call it unhealthy for that.
    @Test func verifyOfAnOutdatedAccountIsHealthyWithTheSchemaNotCompared() throws {
        let dir = TestDirectory()
        let older = try BundleFixture.write(at: dir.sub("v2"), steps: Array(E2E.sampleSteps.prefix(2)))
        let bundle = try BundleFixture.write(at: dir.sub("v3"), steps: E2E.sampleSteps)
        try E2E.createOffline("alice", dataRoot: dir.sub("data"), bundle: older)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let reply = try daemon.client().callOne("verify alice")
        #expect(reply.parameters["healthy"] == true, "\(reply)")
        #expect(reply.parameters["schemaCompared"] == false)
        let verify = try E2E.accountctl(["verify", "alice"], socket: daemon.socket)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("not compared"), "\(verify.stdout)")
        #expect(!verify.stdout.contains("differs"), "\(verify.stdout)")
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 2)
    }
}
