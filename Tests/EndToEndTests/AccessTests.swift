import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SPEC section 8: admins are root, the daemon's own uid and the configured users and
/// groups; anyone else who can connect, without a grant (SPEC section 12, see
/// ``GrantTests``), may ping, ask for info and its own status, and is refused (and
/// logged) for the rest.
@Suite(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv"))
struct AccessTests {
    /// Runs `program` as `uid`/`gid` (with no supplementary groups unless `groups` are given).
    static func run(as uid: Int, gid: Int? = nil, groups: [Int] = [], _ program: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let groupOption = groups.isEmpty ? "--clear-groups" : "--groups=" + groups.map(String.init).joined(separator: ",")
        return try E2E.run("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(gid ?? uid)", groupOption, program] + arguments)
    }

    static func accountctl(as uid: Int, gid: Int? = nil, groups: [Int] = [], socket: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try run(as: uid, gid: gid, groups: groups, Binaries.accountctl, ["--socket", socket] + arguments)
    }

    @Test func nobodyMayReadButNotChange() throws {
        let dir = TestDirectory()
        // The socket sits in the test folder, which uid 65534 must be able to search.
        #expect(chmod(dir.path, 0o755) == 0)
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_SOCKET_MODE": "0666"])
        #expect(Files.mode(daemon.socket) == 0o666)
        #expect(Files.mode(daemon.dataRoot) == 0o700)
        let root = try daemon.client()
        #expect(try root.callOne("switch alice").parameters["action"] == "created")
        try E2E.sql(daemon.accountPath("alice"), "INSERT INTO user_info(user_id, user_name) VALUES (1, 'Ann');")
        let aliceBefore = Files.bytes(daemon.accountPath("alice"))

        let refused: [[String]] = [
            ["switch", "alice"], ["switch", "eve"], ["export", "alice"], ["export", "alice", "--format", "sqlite"],
            ["verify", "alice"], ["plan", "alice"], ["migrate", "alice"], ["migrate", "--all"], ["restore", "alice"], ["snapshots", "alice"],
            ["snapshot", "alice"], ["snapshot", "alice", "--label", "mine"], ["remove", "alice"], ["remove", "alice", "--purge"],
            // SPEC section 12: reading an account needs a grant too.
            ["status", "alice"], ["get", "user", "theme", "--account", "alice"], ["keys", "user", "--account", "alice"],
        ]
        for arguments in refused {
            let result = try Self.accountctl(as: 65534, socket: daemon.socket, arguments)
            #expect(result.status == 1, "\(arguments): exit \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("PermissionDenied"), "\(arguments): \(result.stderr)")
            #expect(!result.stdout.contains("Ann"), "\(arguments) leaked data: \(result.stdout)")
        }
        let allowed: [[String]] = [["status"], ["ping"], ["info"], ["list"], ["list", "--details"], []]
        for arguments in allowed {
            let result = try Self.accountctl(as: 65534, socket: daemon.socket, arguments)
            #expect(result.status == 0, "\(arguments): exit \(result.status) \(result.stderr)")
        }
        // A peer without grants is listed no account (SPEC section 12).
        let list = try Self.accountctl(as: 65534, socket: daemon.socket, ["--json", "list"])
        #expect(list.status == 0 && !list.stdout.contains(#""account":"alice""#), "\(list.stdout)")

        // Nothing changed: same active account, no account made for eve, alice's file as it was.
        let status = try root.callOne("status")
        #expect(status.parameters["active"] == "alice")
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("eve")))
        #expect(Files.bytes(daemon.accountPath("alice")) == aliceBefore)
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.dataRoot + "/snapshots").allSatisfy {
            (try? FileManager.default.contentsOfDirectory(atPath: daemon.dataRoot + "/snapshots/" + $0).isEmpty) ?? true
        })
        // Each refusal is logged with the peer's uid.
        #expect(daemon.log.contains("uid 65534"))
        #expect(daemon.log.contains("refused Switch from uid 65534"), "\(daemon.log.suffix(2000))")
        #expect(daemon.process.isRunning)
    }

    @Test func rootIsAdmin() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let result = try E2E.accountctl(["switch", "alice"], socket: daemon.socket)
        #expect(result.status == 0, "\(result.stderr)")
        let client = try daemon.client()
        #expect(try client.callOne("status").parameters["active"] == "alice")
        #expect(try client.callOne("verify alice").parameters["healthy"] == true)
        #expect(!daemon.log.contains("refused"))
    }

    /// A daemon running as uid 65534: root, that uid, and the configured users and groups are
    /// admins; another uid is not.
    @Test func adminsAreRootTheDaemonsUidAndTheConfiguredOnes() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        #expect(chown(dir.path, 65534, 65534) == 0)
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: E2E.sampleSteps)
        let config = dir.sub("accountd.yaml")
        try Files.write(
            """
            socket:
              mode: "0666"
            admin:
              users: ["4242"]
              groups: ["4343"]
            """, to: config)
        let socket = dir.sub("accountd.sock")
        let logs = dir.sub("logs")
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        let process = try E2E.spawning { try Binaries.start(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.accountd, "--data-root", dir.sub("data"), "--socket", socket,
             "--schema", bundle, "--config", config],
            logDirectory: logs, environment: ["PATH": "/usr/bin:/bin"]) }
        defer { E2E.stop(process) }
        let ready = E2E.waitUntilServing(process, socket: socket)
        let log = { ["/setpriv.out", "/setpriv.err"].map { (try? String(contentsOfFile: logs + $0, encoding: .utf8)) ?? "" }.joined() }
        try #require(ready, "the daemon did not start: \(log())")
        #expect(Files.mode(socket) == 0o666)

        // Root (this test) is an admin although the daemon runs as 65534.
        let root = try E2E.accountctl(["switch", "byroot"], socket: socket)
        #expect(root.status == 0, "\(root.stderr)")
        // The daemon's own uid.
        let own = try Self.accountctl(as: 65534, socket: socket, ["switch", "byowner"])
        #expect(own.status == 0, "\(own.stderr)")
        // A configured user, a configured primary group and a configured supplementary group.
        let user = try Self.accountctl(as: 4242, gid: 4242, socket: socket, ["switch", "byuser"])
        #expect(user.status == 0, "\(user.stderr)")
        let group = try Self.accountctl(as: 5000, gid: 4343, socket: socket, ["switch", "bygroup"])
        #expect(group.status == 0, "\(group.stderr)")
        let supplementary = try Self.accountctl(as: 5001, gid: 5001, groups: [4343], socket: socket, ["switch", "bysupplementary"])
        #expect(supplementary.status == 0, "\(supplementary.stderr)")
        // Anyone else.
        let other = try Self.accountctl(as: 5002, gid: 5002, socket: socket, ["switch", "byother"])
        #expect(other.status == 1)
        #expect(other.stderr.contains("PermissionDenied"), "\(other.stderr)")
        #expect(try Self.accountctl(as: 5002, gid: 5002, socket: socket, ["status"]).status == 0)

        let accounts = try FileManager.default.contentsOfDirectory(atPath: dir.sub("data/accounts")).filter { $0.hasSuffix(".sqlite") }.sorted()
        #expect(accounts == ["byowner.sqlite", "byroot.sqlite", "bysupplementary.sqlite", "bygroup.sqlite", "byuser.sqlite"].sorted())
        #expect(log().contains("uid 5002"))

        E2E.stop(process)
        #expect(process.terminationStatus == 0)
    }
}
