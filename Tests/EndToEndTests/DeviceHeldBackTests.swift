import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A fresh host started while the replica cannot be asked about `device.sqlite` makes no
/// empty one (which Litestream would push over the replica's copy, losing every device-wide
/// preference from its newest state): device namespaces are refused, and once the replica
/// answers, `device.sqlite` is pulled with its values (hostile33b N2).
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct DeviceHeldBackTests {
    /// A replica whose `device.sqlite` holds `switch/kiosk = "lobby"`, made by a host that is
    /// then stopped (a lost machine); the replica and the bundle.
    static func replicaWithKioskLobby(_ dir: borrowing TestDirectory) throws -> (replica: String, bundle: String) {
        let (replica, bundle, daemon, litestream) = try ReplicationTests.replicatingHost(dir)
        let set = try daemon.client().callOne(E2E.request("Set", [("namespace", "switch"), ("key", "kiosk"), ("value", "lobby")]))
        try #require(set.error == nil, "\(set)")
        try litestream.syncAndWait(daemon.dataRoot + "/device.sqlite")
        #expect(E2E.stop(daemon, timeout: 30) == 0)
        litestream.stop()
        return (replica, bundle)
    }

    @Test func aFreshHostWithAnUnreachableReplicaMakesNoEmptyDeviceFile() throws {
        let dir = TestDirectory()
        let (replica, bundle) = try Self.replicaWithKioskLobby(dir)

        // Host B's litestream fails (the store cannot be reached) until `reachable` exists.
        let reachable = dir.sub("reachable")
        let program = dir.sub("gated-litestream")
        try Files.write("#!/bin/sh\n[ -e \(reachable) ] && exec \(TestLitestream.path!) \"$@\"\necho 'dial tcp: connection refused' >&2\nexit 1\n", to: program)
        #expect(chmod(program, 0o755) == 0)
        var environment = E2E.replicationEnvironment(replica: replica, runDirectory: dir.sub("run-b"))
        environment["ACCOUNTD_REPLICATION_LITESTREAM_PROGRAM"] = program
        try FileManager.default.createDirectory(atPath: dir.sub("host-b"), withIntermediateDirectories: true)
        let hostB = try E2E.daemon(directory: dir.sub("host-b"), bundle: bundle, environment: environment)
        let client = try hostB.client()
        let refused = try client.callOne(E2E.request("Set", [("namespace", "switch"), ("key", "kiosk"), ("value", "new")]))
        #expect(refused.error == .internalError && "\(refused.parameters)".contains("device.sqlite is missing"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: hostB.dataRoot + "/device.sqlite"), "an empty device.sqlite was made")
        // The daemon serves meanwhile (a new account is refused too: the replica cannot be asked about it either).
        #expect(try client.callOne("ping").error == nil)

        // The store is back: within the next attempt, the replica's device.sqlite is pulled.
        try Files.write("", to: reachable)
        var last = ""
        let back = waitUntil(timeout: 40, interval: 0.5) {
            let got = try? hostB.client().callOne(E2E.request("Get", [("namespace", "switch"), ("key", "kiosk")]))
            last = "\(String(describing: got))"
            return got?.parameters["value"] == "lobby"
        }
        #expect(back, "\(last) \(hostB.log.suffix(2000))")
    }

    /// hostile33f #2: the daemon went on asking the replica it started with, so an operator who
    /// mended a mistyped replica by the documented procedure (edit, reload) kept device
    /// namespaces refused until a restart; and `accountctl replication` showed no
    /// `device.sqlite` row meanwhile and exited 0.
    @Test func aReloadThatMendsTheReplicaBringsDeviceSqliteBack() throws {
        let dir = TestDirectory()
        let (replica, bundle) = try Self.replicaWithKioskLobby(dir)

        // Host B's replica is mistyped: Litestream cannot reach it.
        let program = dir.sub("mistyped-litestream")
        try Files.write(
            """
            #!/bin/sh
            prev=
            for a in "$@"; do
                if [ "$prev" = -config ] && grep -q mistyped "$a"; then echo 'dial tcp: lookup mistyped: no such host' >&2; exit 1; fi
                case "$a" in *mistyped*) echo 'dial tcp: lookup mistyped: no such host' >&2; exit 1;; esac
                prev=$a
            done
            exec \(TestLitestream.path!) "$@"

            """, to: program)
        #expect(chmod(program, 0o755) == 0)
        let (settings, written) = (dir.sub("accountd-b.yaml"), dir.sub("run-b/litestream.yml"))
        try ReplicaChangeTests.writeSettings(replica: "file://" + dir.sub("mistyped"), config: written, to: settings)
        try FileManager.default.createDirectory(atPath: dir.sub("host-b"), withIntermediateDirectories: true)
        let hostB = try E2E.spawning {
            try DaemonProcess(
                directory: dir.sub("host-b"), bundle: bundle, arguments: ["--config", settings],
                environment: ["ACCOUNTD_REPLICATION_LITESTREAM_PROGRAM": program])
        }
        let client = try hostB.client()
        let refused = try client.callOne(E2E.request("Set", [("namespace", "switch"), ("key", "kiosk"), ("value", "new")]))
        #expect(refused.error == .internalError && "\(refused.parameters)".contains("device.sqlite is missing"), "\(refused) \(hostB.log.suffix(3000))")
        // The health check says so.
        let table = try E2E.accountctl(["replication"], socket: hostB.socket)
        #expect(table.status == 1 && table.stdout.contains("device.sqlite") && table.stdout.contains("missing"), "\(table)")
        #expect(table.stderr.contains("held back"), "\(table)")
        let json = try E2E.accountctl(["--json", "replication"], socket: hostB.socket)
        #expect(json.status == 1 && (try? JSONParser.parse(json.stdout))?["device"]?["status"] == "missing", "\(json)")

        // The documented mend: the right replica in the settings, then a reload.
        try ReplicaChangeTests.writeSettings(replica: replica, config: written, to: settings)
        kill(hostB.process.processIdentifier, SIGHUP)
        var last = ""
        let back = waitUntil(timeout: 40, interval: 0.5) {
            let got = try? hostB.client().callOne(E2E.request("Get", [("namespace", "switch"), ("key", "kiosk")]))
            last = "\(String(describing: got))"
            return got?.parameters["value"] == "lobby"
        }
        #expect(back, "\(last) \(hostB.log.suffix(2000))")
    }
}
