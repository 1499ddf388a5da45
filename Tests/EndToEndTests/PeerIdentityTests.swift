import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SPEC section 8, with the peer's identity as the kernel gave it when the peer connected
/// (`SO_PEERCRED`, `SO_PEERGROUPS`): a connection's rights are fixed then, whatever later
/// happens to the pid it came from.
@Suite(.enabled(
    if: getuid() == 0 && ["/usr/bin/setpriv", "/usr/bin/unshare", "/usr/bin/nsenter", "/usr/bin/perl"].allSatisfy(FileManager.default.isExecutableFile),
    "needs root, setpriv, unshare, nsenter and perl"))
struct PeerIdentityTests {
    /// A daemon (as root) with admin groups 4343 and 0 and a socket anyone may use, in a
    /// folder uid 65534 can search; started under `prefix` (e.g. `unshare`) if given.
    static func startDaemon(in dir: borrowing TestDirectory, prefix: [String] = []) throws -> (process: Process, socket: String, log: () -> String) {
        #expect(chmod(dir.path, 0o755) == 0)
        let config = dir.sub("accountd.yaml")
        try Files.write(
            """
            socket:
              mode: "0666"
            admin:
              groups: ["4343", "0"]
            """, to: config)
        let socket = dir.sub("accountd.sock")
        let logs = dir.sub("logs")
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        let command = prefix + [
            Binaries.accountd, "--data-root", dir.sub("data"), "--socket", socket, "--schema", Repository.sampleBundle, "--config", config,
            "--log-level", "debug",
        ]
        let process = try E2E.spawning { try Binaries.start(command[0], Array(command.dropFirst()), logDirectory: logs, environment: ["PATH": "/usr/bin:/bin"]) }
        let name = (command[0] as NSString).lastPathComponent
        let log = { [".out", ".err"].map { (try? String(contentsOfFile: logs + "/" + name + $0, encoding: .utf8)) ?? "" }.joined() }
        try #require(E2E.waitUntilServing(process, socket: socket), "the daemon did not start: \(log())")
        return (process, socket, log)
    }

    /// Supplementary groups as the kernel reports them at connect: group 0 is told from an
    /// empty list, and a list longer than the first buffer is read whole.
    @Test func supplementaryGroupsAreTheKernelsAtConnect() throws {
        let dir = TestDirectory()
        let (process, socket, log) = try Self.startDaemon(in: dir)
        defer { E2E.stop(process) }
        let many = Array(1001...1100)
        let cases: [(uid: Int, groups: [Int], admin: Bool)] = [
            (5001, [0], true),
            (5002, [], false),
            (5003, many + [4343], true),
            (5004, many, false),
            (5005, [0] + many, true),
        ]
        for (uid, groups, admin) in cases {
            let result = try AccessTests.accountctl(as: uid, gid: uid, groups: groups, socket: socket, ["switch", "by\(uid)"])
            #expect((result.status == 0) == admin, "uid \(uid) with \(groups.count) groups: exit \(result.status) \(result.stderr) \(log().suffix(1000))")
            if !admin { #expect(result.stderr.contains("PermissionDenied"), "\(result.stderr)") }
        }
    }

    /// The finding of issue 29: a non-admin's connection outlives its process, and another
    /// process, in an admin group, gets the same pid. The connection stays a non-admin's.
    ///
    /// Played in a pid namespace of its own (`unshare --pid --mount-proc`), where the daemon
    /// sees the peers' pids and `ns_last_pid` picks the next one.
    @Test func aReusedPidGivesAConnectionNoRights() throws {
        let dir = TestDirectory()
        let (process, path, log) = try Self.startDaemon(in: dir, prefix: ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"])
        // SIGKILL to unshare: --kill-child takes the daemon, the namespace's init, and with it the namespace.
        defer { E2E.stop(process, signal: SIGKILL) }
        let daemonPid = try #require(Self.child(of: process.processIdentifier), "no daemon under unshare: \(log())")
        let enter = ["/usr/bin/nsenter", "--target", "\(daemonPid)", "--pid", "--mount", "--"]

        // uid 65534 connects a socket this test made, then exits; the test keeps the connection.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        let connect = try Self.run(
            enter + [
                "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/perl", "-MSocket", "-e",
                #"open(my $s, "+<&=", 0) or die "fd 0: $!"; connect($s, pack_sockaddr_un($ARGV[0])) or die "connect: $!"; print "$$\n";"#,
                path,
            ], stdin: fd)
        let client = RawClient(adopting: fd)
        try #require(connect.status == 0, "\(connect.stderr)")
        let peerPid = try #require(Int(connect.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let refused = try client.callOne("switch victim")
        #expect(refused.error == .permissionDenied, "\(refused)")

        // A process of uid 5001 in admin group 4343 takes the pid the connection came from.
        let reuse = try Self.run(
            enter + [
                "/bin/bash", "-c",
                """
                # The sleeper must not keep this test's descriptors open (Foundation's Process
                # learns that its child ended when they close).
                for fd in /proc/$$/fd/*; do fd=${fd##*/}; if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done
                i=0
                while [ $i -lt 200 ]; do
                  echo \(peerPid - 1) > /proc/sys/kernel/ns_last_pid
                  /usr/bin/setpriv --reuid=5001 --regid=5001 --groups=4343 /bin/sleep 600 </dev/null >/dev/null 2>&1 &
                  if [ "$!" = "\(peerPid)" ]; then echo reused; exit 0; fi
                  kill $!; wait $! 2>/dev/null
                  i=$((i + 1))
                done
                echo "pid \(peerPid) was not reused"; exit 1
                """,
            ])
        try #require(reuse.status == 0, "\(reuse.stdout) \(reuse.stderr)")
        #expect(
            waitUntil(timeout: 5) {
                let status = (try? Self.run(enter + ["/bin/cat", "/proc/\(peerPid)/status"]).stdout) ?? ""
                return status.contains("Groups:\t4343")
            }, "pid \(peerPid) is not the admin-group process")

        // The same connection is still uid 65534's, with no groups.
        let again = try client.callOne("switch victim")
        #expect(again.error == .permissionDenied, "the connection gained admin rights with the reused pid: \(again)")
        let purge = try client.callOne("remove victim purge")
        #expect(purge.error == .permissionDenied, "\(purge)")
        #expect(!FileManager.default.fileExists(atPath: dir.sub("data/accounts/victim.sqlite")))
        #expect(log().contains("refused Switch from uid 65534"), "\(log().suffix(2000))")
    }

    /// The pid of `pid`'s first child, once it has one.
    static func child(of pid: Int32) -> Int32? {
        var found: Int32?
        _ = waitUntil(timeout: 10) {
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            found = children.split(separator: " ").first.flatMap { Int32($0) }
            return found != nil
        }
        return found
    }

    /// Runs a program to its end with `stdin` as its standard input (null if not given).
    static func run(_ command: [String], stdin: Int32? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let input = stdin.map { FileHandle(fileDescriptor: $0, closeOnDealloc: false) } ?? FileHandle.nullDevice
        return try E2E.spawning { try runProgram(command[0], Array(command.dropFirst()), standardInput: input) }
    }
}
