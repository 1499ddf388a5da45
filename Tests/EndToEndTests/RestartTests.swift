import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Restarts keep the active account; SIGTERM during a migration leaves a sound file.
@Suite struct RestartTests {
    @Test func activeAccountSurvivesARestart() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne("switch bob").error == nil)
        #expect(try Files.savedActiveAccount(daemon.dataRoot) == "bob")
        #expect(Files.mode(daemon.dataRoot + "/state.json") == 0o600)

        try E2E.spawning { try daemon.restart() }
        let after = try daemon.client().callOne("status")
        #expect(after.parameters["active"] == "bob")
        #expect(after.parameters["state"] == "ready")
        #expect(after.parameters["version"] == 3)
        #expect(try Files.savedActiveAccount(daemon.dataRoot) == "bob")
        // No temporary state file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.dataRoot).filter { $0.contains("state.json.") } == [])

        // A second restart after switching back.
        #expect(try daemon.client().callOne("switch alice").parameters["previous"] == "bob")
        try E2E.spawning { try daemon.restart() }
        #expect(try daemon.client().callOne("status").parameters["active"] == "alice")
        #expect(E2E.stop(daemon) == 0)
    }

    @Test func savedAccountThatCannotBeOpenedLeavesNoActiveAccount() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        #expect(try daemon.client().callOne("switch alice").error == nil)
        #expect(E2E.stop(daemon) == 0)
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: daemon.accountPath("alice")))
        try E2E.spawning { try daemon.restart() }
        let status = try daemon.client().callOne("status")
        #expect(status.parameters["active"] == .null)
        #expect(status.parameters["state"] == "idle")
        #expect(Files.bytes(daemon.accountPath("alice")) == Data("not a database".utf8))
    }

    static let rows = 300_000
    /// What must not change across the migration (``Hostile/itemChecksum``).
    static let checksum = Hostile.itemChecksum

    /// Account bob at version 1 with ``rows`` items under `dir/data`, made offline, and the
    /// bundle whose second step rebuilds the table (``Hostile/itemV2``): slow on 300k rows.
    /// Returns that bundle, bob's file and its ``checksum``.
    static func prepareSlowMigration(in dir: borrowing TestDirectory) throws -> (bundle2: String, path: String, before: String) {
        let bundle1 = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        let bundle2 = try BundleFixture.write(at: dir.sub("v2"), steps: [Hostile.itemV1, Hostile.itemV2])
        let dataRoot = dir.sub("data")
        try Hostile.makeItemAccount("bob", rows: rows, dataRoot: dataRoot, bundle: bundle1)
        let path = dataRoot + "/accounts/bob.sqlite"
        return (bundle2, path, try E2E.sql(path, checksum))
    }

    /// Sends `Switch bob` (streaming progress), then `then`, and waits until another
    /// connection's `Status bob` says it is migrating. Returns both connections.
    static func switchUntilMigrating(_ daemon: DaemonProcess, then more: String = "") throws -> (switcher: RawClient, watcher: RawClient) {
        let switcher = try daemon.client()
        try switcher.send(#"{"method":"io.accountd.Switch","parameters":{"account":"bob"},"more":true}"# + "\n" + more)
        let watcher = try daemon.client()
        let migrating = waitUntil(timeout: 20, interval: 0.005) {
            (try? watcher.callOne("status bob"))?.parameters["state"] == "migrating"
        }
        #expect(migrating, "status never showed the migration")
        return (switcher, watcher)
    }

    @Test(arguments: [0.15, 0.6])
    func sigtermDuringALongMigrationLeavesASoundFile(extraDelay: Double) throws {
        let dir = TestDirectory()
        let (bundle2, path, before) = try Self.prepareSlowMigration(in: dir)
        let checksum = Self.checksum
        #expect(before.hasPrefix("\(Self.rows)|"))

        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle2)
        // A ping is pipelined behind the switch: it is left over when SIGTERM comes.
        let (switcher, watcher) = try Self.switchUntilMigrating(daemon, then: "ping\n")
        let daemonStatus = try watcher.callOne("status")
        #expect(daemonStatus.parameters["state"] != "ready" || daemonStatus.parameters["active"] != "bob")
        // SIGTERM lands at a chosen moment of the migration: the delay is the point.
        Thread.sleep(forTimeInterval: extraDelay)

        kill(daemon.process.processIdentifier, SIGTERM)
        // It stops accepting: soon a client that comes is not served.
        let refused = waitUntil(timeout: 20) {
            guard let late = try? RawClient(socket: daemon.socket), let reply = try? late.callOne("ping") else { return true }
            return reply.error == .shuttingDown
        }
        #expect(refused, "new connections were still served 20 s after SIGTERM")
        let exit = E2E.stop(daemon, signal: 0, timeout: 120)
        #expect(exit == 0, "accountd exited with \(exit.map(String.init) ?? "nothing: it hung and was killed")")

        // The switch's client got whole reply lines only: progress, then the switch's final reply
        // (or nothing), then ShuttingDown for the ping (or nothing). Never a torn line.
        var replies: [Reply] = []
        var malformed: [String] = []
        while true {
            let line: String?
            do { line = try switcher.readLine() } catch { break }
            guard let line else { break }
            do { replies.append(try Reply.decode(Array(line.utf8))) } catch { malformed.append(line) }
        }
        #expect(malformed.isEmpty, "corrupted lines: \(malformed)")
        let progress = replies.prefix { $0.continues }
        for step in progress {
            #expect(step.error == nil)
            #expect(step.parameters["step"] != nil)
        }
        var rest = replies.dropFirst(progress.count)
        var switchReply: Reply?
        if let first = rest.first, first.error == nil {
            switchReply = rest.removeFirst()
            #expect(first.parameters["action"] == "migrated")
            #expect(first.parameters["fromVersion"] == 1)
            #expect(first.parameters["version"] == 2)
        }
        for left in rest {
            // On a fast machine the migration and the ping may both be done before SIGTERM
            // lands: the ping was then answered as usual, after the switch's own reply.
            let answeredBeforeSIGTERM = switchReply != nil && left.error == nil && left.parameters == [:]
            #expect(left.error == .shuttingDown || answeredBeforeSIGTERM, "after SIGTERM: \(left.encoded())")
        }
        // A migration that SIGTERM stopped answers the switch ShuttingDown (rolled back), then the ping's.
        #expect(rest.count <= (switchReply == nil ? 2 : 1), "\(rest.map { $0.encoded() })")

        // The file is at version 1 or 2 with every row, and sound.
        let version = try E2E.userVersion(path)
        #expect(version == 1 || version == 2)
        #expect(try E2E.sql(path, "PRAGMA integrity_check;") == "ok")
        #expect(try E2E.sql(path, checksum) == before)
        if version == 2 {
            #expect(try E2E.sql(path, "SELECT count(*) FROM item WHERE extra = 'x';") == String(Self.rows))
            #expect(try E2E.sql(path, "SELECT count(*) FROM accountd_migrations;") == "2")
        } else {
            #expect(try E2E.sql(path, "SELECT count(*) FROM accountd_migrations;") == "1")
            #expect(switchReply == nil, "a final success reply for a migration that did not happen")
        }

        // And the next start takes it from there.
        let next = try E2E.daemon(directory: dir.path, bundle: bundle2)
        let switched = try next.client().callOne("switch bob")
        #expect(switched.error == nil)
        #expect(switched.parameters["version"] == 2)
        #expect(switched.parameters["action"] == (version == 2 ? "opened" : "migrated"))
        #expect(E2E.stop(next) == 0)
    }
}
