import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SIGHUP (`systemctl reload accountd`): a valid new bundle is served at once and the active
/// account brought to it; a broken one is refused with a log line naming the file, and the
/// bundle in use keeps serving.
@Suite struct ReloadTests {
    static let names = ["create_user_info", "add_age", "add_sex_and_app_data"]

    /// Writes migration `number` (0003 -> `0003_<name>.sql`) into `bundle`.
    static func add(_ number: Int, _ name: String, _ sql: String, to bundle: String) throws -> String {
        let file = String(format: "%04d_", number) + name + ".sql"
        try Files.write(sql, to: bundle + "/migrations/" + file)
        return file
    }

    @Test func aGoodBundleIsServedAndTheActiveAccountMigrated() throws {
        let dir = TestDirectory()
        let notify = try DatagramReceiver(path: dir.sub("notify.sock"))
        defer { notify.close() }
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: Array(E2E.sampleSteps.prefix(2)), names: Array(Self.names.prefix(2)))
        let daemon = try DaemonProcess(directory: dir.path, bundle: bundle, environment: ["NOTIFY_SOCKET": notify.path])
        let pid = daemon.process.processIdentifier
        let client = try daemon.client()
        let created = try client.callOne("switch alice")
        #expect(created.parameters["action"] == "created")
        #expect(created.parameters["version"] == 2)

        // Nothing changed: a reload says so and changes nothing.
        kill(pid, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("the schema bundle is unchanged (version 2)") }, "\(daemon.log.suffix(2000))")

        _ = try Self.add(3, Self.names[2], E2E.sampleSteps[2], to: bundle)
        let sent = notify.datagrams.count
        kill(pid, SIGHUP)
        // The active account's version is 3 once its switch commits, a moment before the
        // migration's bookkeeping ends and the state says ready again.
        let reloaded = waitUntil(timeout: 10) {
            let status = (try? daemon.client().callOne("status"))?.parameters
            return status?["version"] == 3 && status?["state"] == "ready"
        }
        #expect(reloaded, "\(daemon.log.suffix(2000))")
        let status = try client.callOne("status")
        #expect(status.parameters["active"] == "alice")
        #expect(status.parameters["version"] == 3)
        #expect(status.parameters["bundleVersion"] == 3)
        #expect(status.parameters["state"] == "ready")
        let alice = try client.callOne("status alice")
        #expect(alice.parameters["version"] == 3, "\(alice)")
        #expect(try client.callOne("info").parameters["bundle"]?["version"] == 3)
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 3)
        #expect(try E2E.sql(daemon.accountPath("alice"), "SELECT count(*) FROM pragma_table_info('user_info') WHERE name = 'sex';") == "1")
        #expect(daemon.log.contains("reload: now serving bundle version 3"), "\(daemon.log.suffix(2000))")
        #expect(daemon.log.contains("reload: active account alice migrated at version 3"), "\(daemon.log.suffix(2000))")

        // systemd hears RELOADING=1, then READY=1 once the reload is done.
        #expect(notify.wait(timeout: 5) { $0.dropFirst(sent).contains { $0.assignments["READY"] == "1" } })
        let afterReload = notify.datagrams.dropFirst(sent)
        let reloading = afterReload.firstIndex { $0.assignments["RELOADING"] == "1" }
        let readyAgain = afterReload.firstIndex { $0.assignments["READY"] == "1" }
        #expect(reloading != nil, "\(afterReload.map(\.text))")
        if let reloading, let readyAgain { #expect(reloading < readyAgain) }
        if let readyAgain { #expect(afterReload[readyAgain].assignments["STATUS"] == "serving; active account alice") }
        #expect(afterReload.allSatisfy { $0.pid == pid })

        // A new account is created at the new version.
        #expect(try client.callOne("switch bob").parameters["version"] == 3)
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    /// A gap in the numbering, or a migration with its own transaction.
    struct BadMigration: Sendable, CustomTestStringConvertible {
        var number: Int
        var name: String
        var sql: String
        var testDescription: String { String(format: "%04d_", number) + name }
    }

    @Test(arguments: [
        BadMigration(number: 5, name: "gap", sql: "CREATE TABLE gap (id INTEGER PRIMARY KEY);\n"),
        BadMigration(number: 4, name: "own_transaction", sql: "BEGIN;\nCREATE TABLE t (id INTEGER PRIMARY KEY);\nCOMMIT;\n"),
    ])
    func aBadBundleIsRefusedAndThePreviousOneKeepsServing(bad: BadMigration) throws {
        let (number, name, sql) = (bad.number, bad.name, bad.sql)
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: E2E.sampleSteps, names: Self.names)
        let daemon = try DaemonProcess(directory: dir.path, bundle: bundle)
        let pid = daemon.process.processIdentifier
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["version"] == 3)

        let file = try Self.add(number, name, sql, to: bundle)
        kill(pid, SIGHUP)
        let refused = waitUntil(timeout: 10) { daemon.log.contains("still serving bundle version 3") }
        #expect(refused, "\(daemon.log.suffix(2000))")
        let line = daemon.log.split(separator: "\n").first { $0.contains("still serving bundle version 3") }
        #expect(line?.contains(file) == true, "the refusal does not name \(file): \(String(describing: line))")

        // Still serving version 3, and switching still works.
        let status = try client.callOne("status")
        #expect(status.parameters["bundleVersion"] == 3)
        #expect(status.parameters["version"] == 3)
        #expect(status.parameters["active"] == "alice")
        #expect(try client.callOne("info").parameters["bundle"]?["version"] == 3)
        let bob = try client.callOne("switch bob")
        #expect(bob.error == nil, "\(bob)")
        #expect(bob.parameters["version"] == 3)
        let back = try client.callOne("switch alice")
        #expect(back.parameters["action"] == "opened")
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 3)
        #expect(daemon.process.isRunning)

        // Once the bundle is fixed, the next reload takes it.
        try FileManager.default.removeItem(atPath: bundle + "/migrations/" + file)
        _ = try Self.add(4, "fixed", "CREATE TABLE fixed (id INTEGER PRIMARY KEY);\n", to: bundle)
        kill(pid, SIGHUP)
        #expect(waitUntil(timeout: 10) { (try? daemon.client().callOne("status"))?.parameters["version"] == 4 }, "\(daemon.log.suffix(2000))")
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    /// A new bundle that passes its checks but whose migration fails on the active account's
    /// data: the migration rolls back, the file stays at the old version, the daemon keeps serving.
    @Test func aMigrationThatFailsOnTheActiveAccountRollsBack() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: E2E.sampleSteps, names: Self.names)
        let daemon = try DaemonProcess(directory: dir.path, bundle: bundle)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["version"] == 3)
        try E2E.sql(daemon.accountPath("alice"), "INSERT INTO user_info(user_id, user_name) VALUES (1, 'Ann'), (2, 'Ann');")

        let file = try Self.add(4, "unique_names", "CREATE UNIQUE INDEX user_name_unique ON user_info(user_name);\n", to: bundle)
        kill(daemon.process.processIdentifier, SIGHUP)
        let logged = waitUntil(timeout: 10) { daemon.log.contains("could not be brought to the new bundle") }
        #expect(logged, "\(daemon.log.suffix(2000))")
        let line = daemon.log.split(separator: "\n").first { $0.contains("could not be brought to the new bundle") }
        #expect(line?.contains(file) == true, "\(String(describing: line))")
        #expect(line?.contains("account=alice") == true, "\(String(describing: line))")

        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 3)
        #expect(try E2E.sql(daemon.accountPath("alice"), "PRAGMA integrity_check;") == "ok")
        #expect(try E2E.sql(daemon.accountPath("alice"), "SELECT count(*) FROM user_info WHERE user_name = 'Ann';") == "2")
        let status = try client.callOne("status")
        #expect(status.parameters["bundleVersion"] == 4)
        #expect(status.parameters["version"] == 3, "the status claims a version alice's file does not have: \(status)")
        #expect(try client.callOne("status alice").parameters["state"] == "outdated")
        let bob = try client.callOne("switch bob")
        #expect(bob.parameters["version"] == 4, "\(bob)")
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }
}
