import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A reload (SIGHUP) is a transaction against what is in force: a bad config (a number out
/// of range, an unknown key) or a bad bundle is refused whole with a log line naming it, and
/// everything in force stays; a good one puts every setting a reload can change in force,
/// compared with what is in force now, not with what the daemon started with.
@Suite struct ReloadTransactionTests {
    /// Writes `config` into the file the daemon reads (`--config`), sends SIGHUP, and returns
    /// what the daemon logged for that reload once it ended (done or refused).
    static func reload(_ daemon: DaemonProcess, config: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let before = daemon.log.utf8.count
        try Files.write(config, to: daemon.directory + "/none.yaml")
        kill(daemon.process.processIdentifier, SIGHUP)
        var logged = ""
        let ended = waitUntil(timeout: 20) {
            logged = String(decoding: daemon.log.utf8.dropFirst(before), as: UTF8.self)
            return logged.contains("reload done") || logged.contains("reload refused") || logged.contains("reload: active account")
                || logged.contains("could not be brought")
        }
        #expect(ended, "the reload did not end: \(logged)", sourceLocation: sourceLocation)
        return logged
    }

    static func snapshotCount(_ client: RawClient, _ account: String) throws -> Int {
        try client.callOne("snapshots \(account)").parameters["snapshots"]?.arrayValue?.count ?? -1
    }

    struct BadConfig: Sendable, CustomTestStringConvertible {
        var yaml: String
        var named: String
        var testDescription: String { named }
    }

    /// These used to crash the daemon (SIGILL, exit 132: "Double value cannot be converted to
    /// Int64"), to be used as they were (a negative timeout), or to be ignored (typos).
    @Test(arguments: [
        BadConfig(yaml: "accounts:\n  lockTimeoutSeconds: 1e300\n", named: "setting accounts.lockTimeoutSeconds is 1e+300;"),
        BadConfig(yaml: "accounts:\n  lockTimeoutSeconds: .inf\n", named: "setting accounts.lockTimeoutSeconds is inf;"),
        BadConfig(yaml: "accounts:\n  lockTimeoutSeconds: -1\n", named: "setting accounts.lockTimeoutSeconds is -1;"),
        BadConfig(yaml: "limits:\n  idleTimeoutSeconds: 1e300\n", named: "setting limits.idleTimeoutSeconds is 1e+300;"),
        BadConfig(yaml: "accounts:\n  snapshotToKeep: 1\n", named: "unknown setting 'accounts.snapshotToKeep'"),
        BadConfig(yaml: "acounts:\n  snapshotsToKeep: 1\n", named: "unknown setting 'acounts'"),
    ])
    func aBadConfigIsRefusedAndThePreviousSettingsStay(bad: BadConfig) throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        // In force: two snapshots kept.
        let good = try Self.reload(daemon, config: "accounts:\n  snapshotsToKeep: 2\n")
        #expect(good.contains("reload done"), "\(good)")

        let logged = try Self.reload(daemon, config: bad.yaml + (bad.yaml.hasPrefix("accounts:") ? "  snapshotsToKeep: 1\n" : "accounts:\n  snapshotsToKeep: 1\n"))
        #expect(daemon.process.isRunning, "accountd died on reload: exit \(daemon.process.terminationStatus): \(logged)")
        let line = logged.split(separator: "\n").first { $0.contains("reload refused") }
        #expect(line?.contains(bad.named) == true, "\(logged)")
        #expect(line?.contains("the previous settings stay in force") == true, "\(logged)")
        #expect(try client.callOne("ping").error == nil)
        // Still two kept, not one (nor the default five).
        for _ in 0..<4 { #expect(try client.callOne("snapshot alice").error == nil) }
        #expect(try Self.snapshotCount(client, "alice") == 2)
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    /// 5 -> reload to 1 -> reload to 5 used to log "the schema bundle is unchanged" and go on
    /// keeping one snapshot: the second reload compared 5 with the start's 5.
    @Test func aReloadComparesWithTheSettingsInForce() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "created")

        let toOne = try Self.reload(daemon, config: "accounts:\n  snapshotsToKeep: 1\n")
        #expect(toOne.contains("now in force: accounts.snapshotsToKeep 5 -> 1"), "\(toOne)")
        for _ in 0..<3 { #expect(try client.callOne("snapshot alice").error == nil) }
        #expect(try Self.snapshotCount(client, "alice") == 1)

        let toFive = try Self.reload(daemon, config: "accounts:\n  snapshotsToKeep: 5\n")
        #expect(toFive.contains("now in force: accounts.snapshotsToKeep 1 -> 5"), "\(toFive)")
        for _ in 0..<3 { #expect(try client.callOne("snapshot alice").error == nil) }
        #expect(try Self.snapshotCount(client, "alice") == 4, "\(daemon.log.suffix(1500))")

        // The same settings again: nothing to change, and it says so.
        let same = try Self.reload(daemon, config: "accounts:\n  snapshotsToKeep: 5\n")
        #expect(same.contains("reload done: the schema bundle is unchanged"), "\(same)")
        #expect(!same.contains("now in force"), "\(same)")
        // A setting only a restart changes is named, and left.
        let restartOnly = try Self.reload(daemon, config: "accounts:\n  snapshotsToKeep: 5\nlimits:\n  maxConnections: 7\n")
        #expect(restartOnly.contains("limits.maxConnections changes only with a restart; still 512"), "\(restartOnly)")
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }

    /// `accounts.lockTimeoutSeconds` changed alone (the bundle unchanged) used to be ignored:
    /// an operation on an account a migration holds waited the old 30 s.
    @Test func aLockTimeoutChangedAloneTakesEffect() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: [Hostile.itemV1, ErrorPathTests.spinningStep])
        try Hostile.makeItemAccount("bob", rows: 8000, dataRoot: dir.sub("data"), bundle: v1)
        let daemon = try E2E.daemon(directory: dir.path, bundle: v2)
        let logged = try Self.reload(daemon, config: "accounts:\n  lockTimeoutSeconds: 1\n")
        #expect(logged.contains("now in force: accounts.lockTimeoutSeconds 30 -> 1"), "\(logged)")

        let (switcher, watcher) = try RestartTests.switchUntilMigrating(daemon)
        let asked = Date()
        let reply = try daemon.client().callOne(#"{"method":"io.accountd.Verify","parameters":{"account":"bob"}}"#)
        let waited = Date().timeIntervalSince(asked)
        #expect(reply.error == .accountBusy, "\(reply.encoded())")
        #expect(waited < 10, "Verify waited \(waited) s: the old 30 s lock timeout is still in force")
        withExtendedLifetime((switcher, watcher)) {}
        #expect(E2E.stop(daemon, timeout: 60) == 0)
    }

    /// A bad bundle refuses the settings read with it too: admins do not change.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv"))
    func aBadBundleRefusesTheSettingsReadWithIt() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: E2E.sampleSteps, names: ReloadTests.names)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle, environment: ["ACCOUNTD_SOCKET_MODE": "0666"])
        _ = try ReloadTests.add(5, "gap", "CREATE TABLE gap (id INTEGER PRIMARY KEY);\n", to: bundle)
        let logged = try Self.reload(daemon, config: "admin:\n  users: [\"65534\"]\n")
        #expect(logged.contains("reload refused"), "\(logged)")
        #expect(logged.contains("0005_gap.sql"), "\(logged)")
        let switched = try AccessTests.accountctl(as: 65534, socket: daemon.socket, ["switch", "eve"])
        #expect(switched.status == 1 && switched.stderr.contains("PermissionDenied"), "uid 65534 became an admin: \(switched)")
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }
}
