import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// An app developer's findings of the third hostile review (issue 31, hostile31c F7, F9, F11,
/// F13): what the daemon says while an account is being opened or migrated, and why a call is
/// refused, is what is true.
@Suite struct AppDeveloperReviewTests {
    /// F13: while a reload's migration of the caller's active account waits for a lock another
    /// process holds, `Status` says `migrating`, and what it waits for, not `outdated` ("no
    /// migration of it runs").
    @Test func statusSaysMigratingWhileTheMigrationWaitsForALock() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: Array(E2E.sampleSteps.prefix(2)), names: Array(ReloadTests.names.prefix(2)))
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle, environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "20"])
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch alice").parameters["version"] == 2)
        let holder = try LockedAccountTests.holdExclusively(daemon.accountPath("alice"))
        defer { try? holder.close() }

        _ = try ReloadTests.add(3, ReloadTests.names[2], E2E.sampleSteps[2], to: bundle)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("reload: bringing the active account alice") }, "\(daemon.log.suffix(2000))")
        usleep(500_000)
        let status = try client.callOne("status")
        #expect(status.parameters["state"] == "migrating", "\(status.encoded())")
        #expect(status.parameters["problem"]?.stringValue?.contains("waiting") == true, "\(status.encoded())")

        try holder.close()
        let ready = waitUntil(timeout: 30) {
            let now = (try? client.callOne("status"))?.parameters
            return now?["state"] == "ready" && now?["version"] == 3
        }
        #expect(ready, "\(daemon.log.suffix(2000))")
    }

    /// F11: while start-up still opens the saved active account (another process holds it), a
    /// `Query` without `account` answers `AccountBusy` naming it, not `NoActiveAccount` ("switch
    /// to one first"); once it opens, the same call answers.
    @Test func aCallWhileTheSavedAccountOpensIsBusyNotWithoutAnAccount() throws {
        let dir = TestDirectory()
        let first = try E2E.daemon(directory: dir.path)
        #expect(try first.client().callOne("switch x1").error == nil)
        #expect(E2E.stop(first) == 0)
        let holder = try LockedAccountTests.holdExclusively(first.accountPath("x1"))
        defer { try? holder.close() }

        let daemon = try E2E.spawning { try DaemonProcess(directory: dir.path, waitForSavedAccount: false) }
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 60)
        #expect(try client.callOne("status").parameters["state"] == "opening")
        let query = #"{"method":"io.accountd.Query","parameters":{"sql":"SELECT 1"}}"#
        let busy = try client.callOne(query)
        #expect(busy.error == .accountBusy, "\(busy.encoded())")
        #expect(busy.parameters["message"]?.stringValue?.contains("x1") == true, "\(busy.encoded())")

        try holder.close()
        let answered = waitUntil(timeout: 40, interval: 0.5) { (try? client.callOne(query))?.error == nil }
        #expect(answered, "\(daemon.log.suffix(2000))")
    }
}

/// The findings that need a non-root uid with a grant (hostile31c F7, F9).
@Suite(.enabled(
    if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && getpwnam("nobody")?.pointee.pw_uid == 65534,
    "needs root, setpriv, and the user nobody (65534)"))
struct AppDeveloperGrantReviewTests {
    static let config = """
        socket:
          mode: "0666"
        accounts:
          lockTimeoutSeconds: 5
        access:
          grants:
            - { user: nobody, accounts: "$user", access: write }
        """

    /// A daemon (as root) on `bundle`, with nobody granted write on its account.
    static func daemon(_ dir: borrowing TestDirectory, bundle: String = Repository.sampleBundle) throws -> DaemonProcess {
        #expect(chmod(dir.path, 0o755) == 0)
        let config = dir.sub("grants.yaml")
        try Files.write(Self.config, to: config)
        return try E2E.spawning { try DaemonProcess(directory: dir.path, bundle: bundle, arguments: ["--config", config]) }
    }

    /// F9: `migrate: false` from a person with a grant is refused naming the parameter (admins
    /// only), not "no grant is for uid ...".
    @Test func migrateFalseFromAGranteeNamesTheParameter() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemon(dir)
        defer { _ = E2E.stop(daemon) }
        let made = try AccessTests.accountctl(as: 65534, socket: daemon.socket, ["switch", "nobody"])
        try #require(made.status == 0, "\(made.stderr)")
        let plain = try AccessTests.accountctl(as: 65534, socket: daemon.socket, ["query", "SELECT 1"])
        #expect(plain.status == 0, "\(plain.stderr)")
        for command in [["query", "SELECT 1"], ["exec", "DELETE FROM user_info"]] {
            let refused = try AccessTests.accountctl(as: 65534, socket: daemon.socket, command + ["--no-migrate"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("PermissionDenied"), "\(refused.stderr)")
            #expect(refused.stderr.contains("migrate: false is for admins only"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("no grant"), "\(refused.stderr)")
        }
    }

    /// F7: a reload's reopen of an active account that a `Query` migrated first (while the
    /// reload waited for another account) is reported `migrated`, not `opened`.
    @Test func aReloadReportsAMigrationAQueryRanFirst() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: Array(E2E.sampleSteps.prefix(2)), names: Array(ReloadTests.names.prefix(2)))
        let daemon = try Self.daemon(dir, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let root = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try root.callOne("switch alpha").error == nil)
        let made = try AccessTests.accountctl(as: 65534, socket: daemon.socket, ["switch", "nobody"])
        try #require(made.status == 0, "\(made.stderr)")
        // The reload brings alpha first (in order of name): held by another process, it waits.
        let holder = try LockedAccountTests.holdExclusively(daemon.accountPath("alpha"))
        defer { try? holder.close() }

        _ = try ReloadTests.add(3, ReloadTests.names[2], E2E.sampleSteps[2], to: bundle)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("reload: bringing the active account alpha") }, "\(daemon.log.suffix(2000))")
        // Meanwhile a Query on nobody's account migrates it.
        let query = try root.callOne(#"{"method":"io.accountd.Query","parameters":{"sql":"SELECT 1","account":"nobody"}}"#)
        #expect(query.error == nil, "\(query.encoded())")
        #expect(daemon.log.contains("account nobody migrated from version 2 to 3"), "\(daemon.log.suffix(2000))")
        try holder.close()

        #expect(waitUntil(timeout: 30) { daemon.log.contains("reload: active account nobody") }, "\(daemon.log.suffix(2000))")
        #expect(daemon.log.contains("reload: active account nobody migrated at version 3"), "\(daemon.log.suffix(2000))")
        #expect(!daemon.log.contains("reload: active account nobody opened"), "\(daemon.log.suffix(2000))")
    }
}
