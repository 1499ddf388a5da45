import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SPEC section 12 with real non-root uids against a real daemon: accounts belong to
/// people (`access.grants`), and the active account is the caller's.
///
/// The users: `nobody` (65534) and `daemon` (1), each granted write on `$user` (the
/// account named like them); uid 5001 (no user name) granted read on `shared-*` and write
/// on `$user`, which for a uid with no name covers nothing; group 5100 granted write on
/// `kiosk-*`.
@Suite(.enabled(
    if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && getpwnam("nobody")?.pointee.pw_uid == 65534
        && getpwnam("daemon")?.pointee.pw_uid == 1,
    "needs root, setpriv, and the users nobody (65534) and daemon (1)"))
struct GrantTests {
    static let nobody = 65534
    static let daemonUser = 1
    static let reader = 5001
    static let kioskGroup = 5100

    static let grants = """
        socket:
          mode: "0666"
        # The active account's name in a metric label, so that its filtering is seen.
        metrics:
          accountLabels: true
        access:
          grants:
            - { user: nobody, accounts: "$user", access: write }
            - { user: "1", accounts: "$user", access: write }
            - { user: "5001", accounts: "shared-*", access: read }
            - { user: "5001", accounts: "$user", access: write }
            - { group: "5100", accounts: "kiosk-*", access: write }
        """

    /// A daemon (as root) with ``grants``, in a folder the other uids can search.
    static func daemon(_ dir: borrowing TestDirectory) throws -> DaemonProcess {
        #expect(chmod(dir.path, 0o755) == 0)
        let config = dir.sub("grants.yaml")
        try Files.write(grants, to: config)
        return try E2E.spawning { try DaemonProcess(directory: dir.path, arguments: ["--config", config]) }
    }

    static func ctl(_ uid: Int, gid: Int? = nil, groups: [Int] = [], _ daemon: DaemonProcess, _ arguments: [String]) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        try AccessTests.accountctl(as: uid, gid: gid, groups: groups, socket: daemon.socket, arguments)
    }

    /// Root makes `accounts`, each with `user theme` set to its own name.
    static func makeAccounts(_ accounts: [String], _ daemon: DaemonProcess) throws {
        for account in accounts {
            let made = try E2E.accountctl(["switch", account], socket: daemon.socket)
            try #require(made.status == 0, "\(made.stderr)")
            let set = try E2E.accountctl(["set", "user", "theme", "\"\(account)\"", "--account", account], socket: daemon.socket)
            try #require(set.status == 0, "\(set.stderr)")
        }
    }

    /// One user cannot read another's account or its preferences: not its status, not a
    /// preference, not its export, not in List, not its events in Watch; and each refusal
    /// is logged with the uid.
    @Test func oneUserCannotReachAnothersAccount() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemon(dir)
        try Self.makeAccounts(["nobody", "daemon", "shared-a"], daemon)

        // nobody's own account: every read and write of it is allowed.
        let own = try Self.ctl(Self.nobody, daemon, ["get", "user", "theme", "--account", "nobody"])
        #expect(own.status == 0 && own.stdout.contains("nobody"), "\(own.stderr)")
        #expect(try Self.ctl(Self.nobody, daemon, ["status", "nobody"]).status == 0)
        #expect(try Self.ctl(Self.nobody, daemon, ["export", "nobody"]).status == 0)
        #expect(try Self.ctl(Self.nobody, daemon, ["set", "user", "font", "12", "--account", "nobody"]).status == 0)

        // daemon's account (uid 1): refused, and nothing of it shown.
        let refused: [[String]] = [
            ["get", "user", "theme", "--account", "daemon"], ["keys", "user", "--account", "daemon"], ["status", "daemon"],
            ["export", "daemon"], ["export", "daemon", "--format", "sqlite"], ["set", "user", "theme", "\"x\"", "--account", "daemon"],
            ["del", "user", "theme", "--account", "daemon"], ["switch", "daemon"], ["snapshot", "daemon"],
        ]
        for arguments in refused {
            let result = try Self.ctl(Self.nobody, daemon, arguments)
            #expect(result.status == 1, "\(arguments): exit \(result.status) \(result.stdout)")
            #expect(result.stderr.contains("PermissionDenied"), "\(arguments): \(result.stderr)")
            #expect(!result.stdout.contains("daemon"), "\(arguments) leaked: \(result.stdout)")
        }
        #expect(daemon.log.contains("refused Get from uid 65534: no read grant on account daemon"), "\(daemon.log.suffix(3000))")
        #expect(daemon.log.contains("refused Export from uid 65534"))
        #expect(daemon.log.contains("refused Status from uid 65534"))

        // List shows only what the caller may read; uid 5001 reads shared-* (and nothing
        // under $user, having no user name).
        let list = try Self.ctl(Self.nobody, daemon, ["--json", "list"])
        #expect(list.status == 0 && list.stdout.contains(#""nobody""#), "\(list.stderr)")
        #expect(!list.stdout.contains(#""daemon""#) && !list.stdout.contains("shared-a"), "\(list.stdout)")
        let readerList = try Self.ctl(Self.reader, daemon, ["--json", "list"])
        #expect(readerList.stdout.contains("shared-a") && !readerList.stdout.contains(#""nobody""#), "\(readerList.stdout)")
        // Root, an admin, sees every account.
        let all = try E2E.accountctl(["--json", "list"], socket: daemon.socket)
        #expect(["nobody", "daemon", "shared-a"].allSatisfy { all.stdout.contains("\"\($0)\"") }, "\(all.stdout)")

        // Watch: nobody hears of its own account and of device-wide changes, not of daemon's.
        let logs = dir.sub("watch")
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        let watcher = try E2E.spawning {
            try Binaries.start(
                "/usr/bin/setpriv",
                ["--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups", Binaries.accountctl, "--socket", daemon.socket, "--json", "watch"],
                logDirectory: logs)
        }
        defer { E2E.stop(watcher) }
        let seen = { (try? String(contentsOfFile: logs + "/setpriv.out", encoding: .utf8)) ?? "" }
        // Until the watch is subscribed, keep changing nobody's account; then the others'.
        #expect(
            try waitUntil(timeout: 20, interval: 0.1) {
                _ = try E2E.accountctl(["set", "user", "probe", "1", "--account", "nobody"], socket: daemon.socket)
                return seen().contains(#""key":"probe""#)
            }, "the watch never started: \(seen()) \((try? String(contentsOfFile: logs + "/setpriv.err", encoding: .utf8)) ?? "")")
        #expect(try E2E.accountctl(["set", "user", "secret", "\"daemon's\"", "--account", "daemon"], socket: daemon.socket).status == 0)
        #expect(try E2E.accountctl(["set", "user", "secret", "\"shared\"", "--account", "shared-a"], socket: daemon.socket).status == 0)
        #expect(try E2E.accountctl(["switch", "daemon"], socket: daemon.socket).status == 0)
        #expect(try E2E.accountctl(["set", "switch", "beta", "true"], socket: daemon.socket).status == 0)
        #expect(try E2E.accountctl(["set", "user", "last", "2", "--account", "nobody"], socket: daemon.socket).status == 0)
        #expect(waitUntil(timeout: 10, interval: 0.05) { seen().contains(#""key":"last""#) }, "\(seen())")
        let events = seen()
        #expect(events.contains(#""key":"beta""#), "a device-wide change goes to every watcher: \(events)")
        #expect(!events.contains("daemon") && !events.contains("secret") && !events.contains("shared"), "another's events leaked: \(events)")

        // Metrics name the active account of the uid that switched last (root: daemon), for admins only.
        #expect(try E2E.accountctl(["metrics"], socket: daemon.socket).stdout.contains(#"account="daemon""#))
        let metrics = try Self.ctl(Self.nobody, daemon, ["metrics"])
        #expect(metrics.status == 0 && metrics.stdout.contains("accountd_requests_total"), "\(metrics.stderr)")
        #expect(!metrics.stdout.contains(#"account="daemon""#), "\(metrics.stdout)")
    }

    /// `$user` is the account named exactly like the caller's user name; a uid with no name
    /// has none. A read grant cannot change; a write grant does not open admin methods.
    @Test func grantsAllowWhatTheySayAndNoMore() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemon(dir)
        try Self.makeAccounts(["daemon", "shared-a", "kiosk-1", "kiosk-2"], daemon)

        // $user: uid 1 is "daemon"; uid 5001 has no name, so no account is its: not even one
        // named like its uid (refused before the file is looked for).
        #expect(try Self.ctl(Self.daemonUser, daemon, ["get", "user", "theme", "--account", "daemon"]).status == 0)
        #expect(try Self.ctl(Self.daemonUser, daemon, ["get", "user", "theme", "--account", "shared-a"]).status == 1)
        for account in ["5001", "nobody", "daemon"] {
            let unnamed = try Self.ctl(Self.reader, daemon, ["get", "user", "theme", "--account", account])
            #expect(unnamed.status == 1 && unnamed.stderr.contains("PermissionDenied"), "\(account): \(unnamed.stderr)")
        }

        // A read grant reads, and changes nothing.
        let read = try Self.ctl(Self.reader, daemon, ["get", "user", "theme", "--account", "shared-a"])
        #expect(read.status == 0 && read.stdout.contains("shared-a"), "\(read.stderr)")
        #expect(try Self.ctl(Self.reader, daemon, ["export", "shared-a"]).status == 0)
        #expect(try Self.ctl(Self.reader, daemon, ["status", "shared-a"]).status == 0)
        for arguments in [
            ["set", "user", "theme", "\"x\"", "--account", "shared-a"], ["del", "user", "theme", "--account", "shared-a"],
            ["switch", "shared-a"], ["snapshot", "shared-a"],
        ] {
            let result = try Self.ctl(Self.reader, daemon, arguments)
            #expect(result.status == 1 && result.stderr.contains("PermissionDenied"), "\(arguments): \(result.stderr)")
        }
        let theme = try E2E.accountctl(["get", "user", "theme", "--account", "shared-a"], socket: daemon.socket)
        #expect(theme.stdout.contains("shared-a"), "the read grant changed the account: \(theme.stdout)")
        #expect(daemon.log.contains("refused Set from uid 5001: no write grant on account shared-a"), "\(daemon.log.suffix(2000))")

        // A write grant (by supplementary group) writes, switches and snapshots its accounts...
        let kiosk = { (arguments: [String]) in try Self.ctl(6000, gid: 6000, groups: [Self.kioskGroup], daemon, arguments) }
        #expect(try kiosk(["switch", "kiosk-1"]).status == 0)
        #expect(try kiosk(["set", "user", "theme", "\"kiosk\""]).status == 0)
        #expect(try kiosk(["snapshot", "kiosk-1"]).status == 0)
        // ...and no more: not another's account, not device-wide changes, not the admin methods.
        for arguments in [
            ["switch", "shared-a"], ["set", "switch", "beta", "true"], ["remove", "kiosk-2"], ["remove", "kiosk-2", "--purge"],
            ["restore", "kiosk-1"], ["migrate", "kiosk-1"], ["migrate", "--all"], ["verify", "kiosk-1"], ["plan", "kiosk-1"],
            ["snapshots", "kiosk-1"], ["pull", "kiosk-2"],
        ] {
            let result = try kiosk(arguments)
            #expect(result.status == 1 && result.stderr.contains("PermissionDenied"), "\(arguments): \(result.stderr)")
        }
        #expect(FileManager.default.fileExists(atPath: daemon.accountPath("kiosk-2")))
        #expect(daemon.log.contains("refused Remove from uid 6000"))
    }

    /// Two uids each switch to their own account; each one's calls without `account` land
    /// in their own file, also after a restart; a caller that never switched has none.
    @Test func eachCallerHasItsOwnActiveAccountAcrossARestart() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemon(dir)
        try Self.makeAccounts(["nobody", "daemon"], daemon)
        // Root switched last to daemon: its own active account, nobody else's.
        #expect(try Self.ctl(Self.nobody, daemon, ["switch", "nobody"]).status == 0)
        #expect(try Self.ctl(Self.daemonUser, daemon, ["switch", "daemon"]).status == 0)
        #expect(try E2E.accountctl(["switch", "nobody"], socket: daemon.socket).status == 0)

        func check(_ round: String) throws {
            for (uid, account) in [(Self.nobody, "nobody"), (Self.daemonUser, "daemon")] {
                let status = try Self.ctl(uid, daemon, ["--json", "status"])
                #expect(status.stdout.contains(#""active":"\#(account)""#), "\(round): uid \(uid): \(status.stdout) \(status.stderr)")
                let set = try Self.ctl(uid, daemon, ["set", "user", "round", "\"\(round)-\(uid)\""])
                #expect(set.status == 0, "\(round): uid \(uid): \(set.stderr)")
                let read = try Self.ctl(uid, daemon, ["get", "user", "round"])
                #expect(read.stdout.contains("\(round)-\(uid)"), "\(round): uid \(uid): \(read.stdout) \(read.stderr)")
                // In the caller's own file, as root reads it there.
                let there = try E2E.accountctl(["get", "user", "round", "--account", account], socket: daemon.socket)
                #expect(there.stdout.contains("\(round)-\(uid)"), "\(round): \(account): \(there.stdout)")
            }
            // Root's active account is its own (the last it switched to), untouched by the others.
            let root = try E2E.accountctl(["--json", "status"], socket: daemon.socket)
            #expect(root.stdout.contains(#""active":"nobody""#), "\(round): \(root.stdout)")
            #expect(try E2E.accountctl(["get", "user", "theme"], socket: daemon.socket).stdout.contains("nobody"))
        }
        try check("before")
        let state = try #require(Files.bytes(daemon.dataRoot + "/state.json"))
        let text = String(decoding: state, as: UTF8.self)
        #expect(text.contains(#""65534":"nobody""#) && text.contains(#""1":"daemon""#) && text.contains(#""0":"nobody""#), "\(text)")

        try daemon.restart()
        // Each uid's saved account opens in the background.
        #expect(
            try waitUntil(timeout: 30, interval: 0.1) {
                try [Self.nobody, Self.daemonUser].allSatisfy { uid in
                    try Self.ctl(uid, daemon, ["--json", "status"]).stdout.contains(#""state":"ready""#)
                }
            }, "\(daemon.log.suffix(2000))")
        try check("after")

        // A uid that never switched has no active account: its calls without one land nowhere.
        let stranger = try Self.ctl(Self.reader, daemon, ["get", "user", "theme"])
        #expect(stranger.status == 1 && stranger.stderr.contains("NoActiveAccount"), "\(stranger.stderr)")
        let status = try Self.ctl(Self.reader, daemon, ["--json", "status"])
        #expect(status.status == 0 && !status.stdout.contains(#""active":""#), "\(status.stdout)")
    }

    /// A reload with a newer bundle brings every uid's active account to it, not one.
    @Test func aReloadMigratesEveryCallersActiveAccount() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        let config = dir.sub("grants.yaml")
        try Files.write(Self.grants, to: config)
        let bundle = try BundleFixture.write(
            at: dir.sub("bundle"), steps: Array(E2E.sampleSteps.prefix(2)), names: Array(ReloadTests.names.prefix(2)))
        let daemon = try E2E.spawning { try DaemonProcess(directory: dir.path, bundle: bundle, arguments: ["--config", config]) }
        #expect(try Self.ctl(Self.nobody, daemon, ["switch", "nobody"]).status == 0)
        #expect(try Self.ctl(Self.daemonUser, daemon, ["switch", "daemon"]).status == 0)
        #expect(try E2E.accountctl(["switch", "rootsown"], socket: daemon.socket).status == 0)

        _ = try ReloadTests.add(3, ReloadTests.names[2], E2E.sampleSteps[2], to: bundle)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(
            waitUntil(timeout: 20, interval: 0.1) { ["nobody", "daemon", "rootsown"].allSatisfy { daemon.log.contains("reload: active account \($0) migrated at version 3") } },
            "\(daemon.log.suffix(3000))")
        for account in ["nobody", "daemon", "rootsown"] {
            #expect(try E2E.userVersion(daemon.accountPath(account)) == 3, "\(account)")
        }
        for uid in [Self.nobody, Self.daemonUser] {
            let status = try Self.ctl(uid, daemon, ["--json", "status"])
            #expect(status.stdout.contains(#""version":3"#), "uid \(uid): \(status.stdout)")
        }
    }

    /// A reload replaces the grants whole; a reload with a bad grant is refused and the
    /// grants in force stay.
    @Test func aReloadReplacesTheGrants() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemon(dir)
        try Self.makeAccounts(["nobody", "shared-a"], daemon)
        let config = dir.sub("grants.yaml")
        let pid = daemon.process.processIdentifier
        #expect(try Self.ctl(Self.nobody, daemon, ["get", "user", "theme", "--account", "nobody"]).status == 0)

        // A bad grant: refused, and nobody's grant stays.
        try Files.write(Self.grants + "\n    - { user: nobody, accounts: \"*\", access: everything }\n", to: config)
        kill(pid, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("reload refused") }, "\(daemon.log.suffix(2000))")
        #expect(daemon.log.contains("a grant needs access: read or write"), "\(daemon.log.suffix(2000))")
        #expect(try Self.ctl(Self.nobody, daemon, ["get", "user", "theme", "--account", "nobody"]).status == 0)

        // nobody now reads shared-*, and its own account no more.
        try Files.write("socket:\n  mode: \"0666\"\naccess:\n  grants:\n    - { user: nobody, accounts: \"shared-*\", access: read }\n", to: config)
        kill(pid, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("-> user 65534 read shared-*") }, "\(daemon.log.suffix(2000))")
        let own = try Self.ctl(Self.nobody, daemon, ["get", "user", "theme", "--account", "nobody"])
        #expect(own.status == 1 && own.stderr.contains("PermissionDenied"), "\(own.stderr)")
        let shared = try Self.ctl(Self.nobody, daemon, ["get", "user", "theme", "--account", "shared-a"])
        #expect(shared.status == 0 && shared.stdout.contains("shared-a"), "\(shared.stderr)")
    }

    /// Grants are checked whole when the settings load: an unknown key, an unknown user,
    /// both user and group, or a wrong access stop the start with the reason.
    @Test(arguments: [
        ("{ user: nobody, accounts: \"*\", access: read, extra: 1 }", "unknown key 'extra'"),
        ("{ user: no-such-user-here, accounts: \"*\", access: read }", "no such user 'no-such-user-here'"),
        ("{ group: no-such-group-here, accounts: \"*\", access: read }", "no such group 'no-such-group-here'"),
        ("{ user: nobody, group: nogroup, accounts: \"*\", access: read }", "exactly one of user or group"),
        ("{ user: nobody, accounts: \"*\", access: admin }", "access: read or write"),
        ("{ user: nobody, accounts: \"a/b\", access: read }", "accounts 'a/b'"),
        ("{ user: nobody, access: read }", "needs accounts"),
    ])
    func badGrantsStopTheStart(grant: String, reason: String) throws {
        let dir = TestDirectory()
        let result = try SettingsValidationTests.start(config: "access:\n  grants:\n    - \(grant)\n", in: dir, name: "grant")
        #expect(result.exited != nil, "accountd started with \(grant)")
        #expect(result.log.contains(reason), "\(result.log)")
    }
}
