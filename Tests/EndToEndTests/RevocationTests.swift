import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// What happens to a person's active account and open streams when their access goes:
/// an admin removes the account, a reload or a restart takes the grant away (the hostile
/// review of issue 31, F13 and F17). Real non-root uids against a real daemon, with
/// ``GrantTests``'s grants: group 5100 writes `kiosk-*`, uid 5001 reads `shared-*`.
@Suite(.enabled(
    if: getuid() == 0 && ["/usr/bin/setpriv", "/usr/bin/perl"].allSatisfy(FileManager.default.isExecutableFile)
        && getpwnam("daemon")?.pointee.pw_uid == 1 && getpwnam("nobody")?.pointee.pw_uid == 65534,
    "needs root, setpriv, perl, and the users nobody (65534) and daemon (1)"))
struct RevocationTests {
    /// A kiosk: uid 6000, whose only grant is through its supplementary group 5100.
    static func kiosk(_ daemon: DaemonProcess, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try GrantTests.ctl(6000, gid: 6000, groups: [GrantTests.kioskGroup], daemon, arguments)
    }

    /// ``GrantTests/grants`` without the lines that contain `dropping`, in force at the next
    /// reload or start.
    static func grants(without dropping: String, in dir: borrowing TestDirectory) throws {
        let kept = GrantTests.grants.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains(dropping) }
        try Files.write(kept.joined(separator: "\n") + "\n", to: dir.sub("grants.yaml"))
    }

    /// The active accounts `state.json` records now (its slot with the higher generation),
    /// as `"uid":"account"` pairs, e.g. `"6000":"kiosk-1","65534":"nobody"`.
    static func state(_ daemon: DaemonProcess) -> String {
        let text = String(decoding: Files.bytes(daemon.dataRoot + "/state.json") ?? Data(), as: UTF8.self)
        var current: (generation: Int, accounts: [String: String]) = (-1, [:])
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let generation = object["generation"] as? Int, let accounts = object["accounts"] as? [String: String],
                generation > current.generation
            else { continue }
            current = (generation, accounts)
        }
        return current.accounts.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }.joined(separator: ",")
    }

    /// The whole text of `state.json`, both slots.
    static func stateFile(_ daemon: DaemonProcess) -> String {
        String(decoding: Files.bytes(daemon.dataRoot + "/state.json") ?? Data(), as: UTF8.self)
    }

    /// An admin removes, or purges, an account that other uids have as their active account:
    /// it goes, and they have no active account any more (their calls without `account` get
    /// `NoActiveAccount`, also after a restart). The admin's own active account is still refused.
    @Test func anAdminRemovesAnotherUidsActiveAccount() throws {
        let dir = TestDirectory()
        let daemon = try GrantTests.daemon(dir)
        try GrantTests.makeAccounts(["kiosk-1", "daemon", "rootsown"], daemon)
        #expect(try Self.kiosk(daemon, ["switch", "kiosk-1"]).status == 0)
        #expect(try GrantTests.ctl(GrantTests.daemonUser, daemon, ["switch", "daemon"]).status == 0)
        #expect(try E2E.accountctl(["switch", "rootsown"], socket: daemon.socket).status == 0)

        // The caller's own active account: refused, as SPEC says, and untouched.
        let own = try E2E.accountctl(["remove", "rootsown", "--purge"], socket: daemon.socket)
        #expect(own.status == 1 && own.stderr.contains("AccountActive") && own.stderr.contains("your active account"), "\(own.stderr)")
        #expect(FileManager.default.fileExists(atPath: daemon.accountPath("rootsown")))

        // Another uid's: purged, and no longer its active account, in memory and in state.json.
        let purge = try E2E.accountctl(["remove", "kiosk-1", "--purge"], socket: daemon.socket)
        #expect(purge.status == 0, "\(purge.stderr)")
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("kiosk-1")))
        #expect(!Self.stateFile(daemon).contains("kiosk-1"), "a purged name stays in state.json: \(Self.stateFile(daemon))")
        #expect(daemon.log.contains("account kiosk-1 was removed while it was the active account of uid 6000"), "\(daemon.log.suffix(2000))")
        // Removed (a snapshot kept) while uid 1's.
        let removed = try E2E.accountctl(["remove", "daemon"], socket: daemon.socket)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(!Self.state(daemon).contains(#""1":"daemon""#), "\(Self.state(daemon))")

        func checkNoneActive(_ round: String) throws {
            for (uid, ctl) in [(6000, { try Self.kiosk(daemon, $0) }), (1, { try GrantTests.ctl(GrantTests.daemonUser, daemon, $0) })] {
                let status = try ctl(["--json", "status"])
                #expect(status.status == 0 && !status.stdout.contains(#""active":""#), "\(round): uid \(uid): \(status.stdout) \(status.stderr)")
                let get = try ctl(["get", "user", "theme"])
                #expect(get.status == 1 && get.stderr.contains("NoActiveAccount"), "\(round): uid \(uid): \(get.stderr)")
            }
            // Root's own active account stands.
            #expect(try E2E.accountctl(["--json", "status"], socket: daemon.socket).stdout.contains(#""active":"rootsown""#))
        }
        // An account made again under the removed name is not theirs either: nothing lands in it.
        #expect(try E2E.accountctl(["switch", "kiosk-1"], socket: daemon.socket).status == 0)
        #expect(try E2E.accountctl(["switch", "rootsown"], socket: daemon.socket).status == 0)
        try checkNoneActive("after the removals")
        try daemon.restart()
        try checkNoneActive("after a restart")
        // uid 6000 may switch again to an account of its grant.
        #expect(try Self.kiosk(daemon, ["switch", "kiosk-2"]).status == 0)
        #expect(try Self.kiosk(daemon, ["set", "user", "theme", "\"again\""]).status == 0)
    }

    /// A reload that takes a uid's grant away clears its active account at once, durably:
    /// its calls without `account` get `NoActiveAccount` (not a `PermissionDenied` on each
    /// call forever), and an admin may remove the account.
    @Test func aReloadThatRevokesTheGrantClearsTheActiveAccount() throws {
        let dir = TestDirectory()
        let daemon = try GrantTests.daemon(dir)
        try GrantTests.makeAccounts(["nobody"], daemon)
        #expect(try Self.kiosk(daemon, ["switch", "kiosk-1"]).status == 0)
        #expect(try Self.kiosk(daemon, ["set", "user", "theme", "\"kiosk\""]).status == 0)
        #expect(try GrantTests.ctl(GrantTests.nobody, daemon, ["switch", "nobody"]).status == 0)
        #expect(Self.state(daemon).contains(#""6000":"kiosk-1""#), "\(Self.state(daemon))")

        try Self.grants(without: "kiosk-*", in: dir)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(
            waitUntil(timeout: 10) { daemon.log.contains("reload: uid 6000 may no longer read its active account kiosk-1") },
            "\(daemon.log.suffix(2000))")
        #expect(waitUntil(timeout: 10) { !Self.state(daemon).contains("6000") }, "\(Self.state(daemon))")
        // uid 65534 keeps its own (its grant stayed).
        #expect(Self.state(daemon).contains(#""65534":"nobody""#), "\(Self.state(daemon))")
        #expect(try GrantTests.ctl(GrantTests.nobody, daemon, ["get", "user", "theme"]).stdout.contains("nobody"))

        let get = try Self.kiosk(daemon, ["get", "user", "theme"])
        #expect(get.status == 1 && get.stderr.contains("NoActiveAccount"), "\(get.stderr)")
        let status = try Self.kiosk(daemon, ["--json", "status"])
        #expect(status.status == 0 && !status.stdout.contains(#""active":""#), "\(status.stdout)")
        let purge = try E2E.accountctl(["remove", "kiosk-1", "--purge"], socket: daemon.socket)
        #expect(purge.status == 0, "\(purge.stderr)")
    }

    /// A restart with the grant gone: the saved active account is cleared, durably, at the
    /// uid's next call (what the kernel says of it then decides).
    @Test func aRestartWithoutTheGrantClearsTheActiveAccountAtTheNextCall() throws {
        let dir = TestDirectory()
        let daemon = try GrantTests.daemon(dir)
        #expect(try Self.kiosk(daemon, ["switch", "kiosk-1"]).status == 0)
        try Self.grants(without: "kiosk-*", in: dir)
        try daemon.restart()
        #expect(waitUntil(timeout: 20) { daemon.log.contains("restored the active account kiosk-1 of uid 6000") }, "\(daemon.log.suffix(2000))")

        let get = try Self.kiosk(daemon, ["get", "user", "theme"])
        #expect(get.status == 1 && get.stderr.contains("NoActiveAccount"), "\(get.stderr)")
        #expect(waitUntil(timeout: 10) { !Self.state(daemon).contains("6000") }, "\(Self.state(daemon))")
        try daemon.restart()
        let again = try Self.kiosk(daemon, ["--json", "status"])
        #expect(!again.stdout.contains(#""active":""#), "\(again.stdout)")
        #expect(try E2E.accountctl(["remove", "kiosk-1", "--purge"], socket: daemon.socket).status == 0)
    }

    /// A process of the same uid without the group the grant is for (a shell of the kiosk's
    /// user, say) is refused, as before, but does not end the active account for the
    /// process that switched with the group; nor does it after a restart, once that process
    /// has used it.
    @Test func anotherProcessOfTheUidWithoutTheGrantDoesNotEndIt() throws {
        let dir = TestDirectory()
        let daemon = try GrantTests.daemon(dir)
        let shell = { (arguments: [String]) in try GrantTests.ctl(6000, gid: 6000, daemon, arguments) }
        #expect(try Self.kiosk(daemon, ["switch", "kiosk-1"]).status == 0)
        for round in ["before a restart", "after a restart"] {
            #expect(try Self.kiosk(daemon, ["set", "user", "theme", "\"kiosk\""]).status == 0, "\(round)")
            let refused = try shell(["get", "user", "theme"])
            #expect(refused.status == 1 && refused.stderr.contains("PermissionDenied"), "\(round): \(refused.stderr)")
            #expect(try shell(["--json", "status"]).stdout.contains(#""active":"kiosk-1""#), "\(round)")
            #expect(try Self.kiosk(daemon, ["get", "user", "theme"]).stdout.contains("kiosk"), "\(round)")
            #expect(Self.state(daemon).contains(#""6000":"kiosk-1""#), "\(round): \(Self.state(daemon))")
            try daemon.restart()
        }
    }

    /// hostile31d F1: after a restart, the first call of a process of the user without the
    /// group that grants the account (a cron job) cleared the user's saved active account,
    /// durably, and got `NoActiveAccount`. Until a process that may read it calls, the user is
    /// judged as the user database has it: the call is refused, the account stays.
    @Test func afterARestartAProcessOfTheUserWithoutTheGroupDoesNotEndIt() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        let config = dir.sub("grants.yaml")
        // nobody's primary group, in the user database, grants it the family accounts.
        try Files.write("socket:\n  mode: \"0666\"\naccess:\n  grants:\n    - { group: \"65534\", accounts: \"family-*\", access: write }\n", to: config)
        let daemon = try E2E.spawning { try DaemonProcess(directory: dir.path, arguments: ["--config", config]) }
        let app = { (arguments: [String]) in try GrantTests.ctl(65534, gid: 65534, daemon, arguments) }
        let cron = { (arguments: [String]) in try GrantTests.ctl(65534, gid: 12345, daemon, arguments) }
        let switched = try app(["switch", "family-a"])
        #expect(switched.status == 0, "\(switched.stderr)")
        try daemon.restart()
        #expect(waitUntil(timeout: 20) { daemon.log.contains("restored the active account family-a of uid 65534") }, "\(daemon.log.suffix(2000))")

        for arguments in [["--json", "status"], ["get", "user", "theme"]] {
            let refused = try cron(arguments)
            #expect(!refused.stderr.contains("NoActiveAccount") && !refused.stdout.contains("NoActiveAccount"), "\(arguments): \(refused.stdout) \(refused.stderr)")
        }
        #expect(try cron(["get", "user", "theme"]).stderr.contains("PermissionDenied"))
        #expect(!daemon.log.contains("may no longer read its active account"), "\(daemon.log.suffix(2000))")
        #expect(Self.state(daemon).contains(#""65534":"family-a""#), "\(Self.state(daemon))")
        #expect(try app(["--json", "status"]).stdout.contains(#""active":"family-a""#))
    }

    /// A `Query` stream and an `Export` stream opened before a reload that takes the reader's
    /// grant away end with `PermissionDenied` at their next chunk: the rest is not sent.
    @Test func streamsEndWhenAReloadRevokesTheGrant() throws {
        let dir = TestDirectory()
        let daemon = try GrantTests.daemon(dir)
        try GrantTests.makeAccounts(["shared-a"], daemon)
        let rows = 60000
        let fill = try daemon.client().callOne(
            DataCalls.execute(
                "shared-a",
                [("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < ?) INSERT INTO app_data(key, value) SELECT 'k' || n, hex(randomblob(60)) FROM r", [.int(Int64(rows))])]))
        try #require(fill.error == nil, "\(fill)")

        // uid 5001 (read grant on shared-*) opens both streams and reads their first replies.
        let query = try Self.client(as: GrantTests.reader, socket: daemon.socket)
        try query.send(DataCalls.query("shared-a", "SELECT key, value FROM app_data", more: true) + "\n")
        let columns = try query.readReply()
        #expect(columns.error == nil && columns.parameters["columns"] != nil, "\(columns)")
        let export = try Self.client(as: GrantTests.reader, socket: daemon.socket)
        try export.send(#"{"method":"io.accountd.Export","parameters":{"account":"shared-a","format":"jsonl"},"more":true}"# + "\n")
        #expect(try export.readReply().error == nil)

        try Self.grants(without: "shared-*", in: dir)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("reload done") }, "\(daemon.log.suffix(2000))")

        // Each stream ends with PermissionDenied, well before its last row.
        var queried = 0
        var last = try query.readReply()
        while last.continues {
            queried += last.parameters["rows"]?.arrayValue?.count ?? 0
            last = try query.readReply()
        }
        #expect(last.error == .permissionDenied, "\(last)")
        #expect(queried < rows / 2, "\(queried) of \(rows) rows were sent after the grant was revoked")
        var exported = 0
        var end = try export.readReply()
        while end.continues {
            exported += 1
            end = try export.readReply()
        }
        #expect(end.error == .permissionDenied, "\(end)")
        #expect(exported < rows / 2, "\(exported) of \(rows) rows were exported after the grant was revoked")
        #expect(daemon.log.contains("refused Query from uid 5001: no read grant on account shared-a"), "\(daemon.log.suffix(2000))")
        // The connections stay usable; a new request is refused as any other.
        #expect(try query.callOne(DataCalls.query("shared-a", "SELECT 1")).error == .permissionDenied)
    }

    /// A `Query` without `more` still running when a reload takes the reader's grant away
    /// answers `PermissionDenied`, not its rows.
    @Test func aQueryRunningWhenAReloadRevokesTheGrantIsRefused() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        let config = dir.sub("grants.yaml")
        try Files.write(GrantTests.grants, to: config)
        let daemon = try E2E.spawning {
            try DaemonProcess(directory: dir.path, arguments: ["--config", config], environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "120000"])
        }
        try GrantTests.makeAccounts(["shared-a"], daemon)
        let reader = try Self.client(as: GrantTests.reader, socket: daemon.socket)
        let count = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5000000) SELECT count(*) FROM r"
        try reader.send(DataCalls.query("shared-a", count) + "\n")
        Thread.sleep(forTimeInterval: 0.1)
        try Self.grants(without: "shared-*", in: dir)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("reload done") }, "\(daemon.log.suffix(2000))")
        let reply = try reader.readReply()
        #expect(reply.error == .permissionDenied, "\(reply)")
        #expect(reply.parameters["rows"] == nil, "\(reply)")
    }

    /// A connection to `socket` made by `uid` (through `setpriv` and `perl`, which connect a
    /// socket this test made and exit), so the daemon sees that uid; the test keeps it.
    static func client(as uid: Int, socket path: String) throws -> RawClient {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        let client = RawClient(adopting: fd)
        let connect = try PeerIdentityTests.run(
            [
                "/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/perl", "-MSocket", "-e",
                #"open(my $s, "+<&=", 0) or die "fd 0: $!"; connect($s, pack_sockaddr_un($ARGV[0])) or die "connect: $!";"#, path,
            ], stdin: fd)
        try #require(connect.status == 0, "\(connect.stderr)")
        client.setReceiveTimeout(30)
        return client
    }
}
