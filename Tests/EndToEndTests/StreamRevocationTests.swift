import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A grant revoked by a reload ends a stream already running (hostile31 F13): the grant is
/// asked again before each piece of a streamed `Query`, so the rest of the snapshot is not
/// read by someone who may no longer read it.
@Suite(.enabled(
    if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && getpwnam("nobody")?.pointee.pw_uid == 65534
        && FileManager.default.isExecutableFile(atPath: "/bin/sh"),
    "needs root, setpriv, /bin/sh and the user nobody (65534)"))
struct StreamRevocationTests {
    static func config(granted: Bool) -> String {
        """
        socket:
          mode: "0666"
        access:
          grants:
        \(granted ? "    - { user: nobody, accounts: \"shared-*\", access: read }" : "    - { user: nobody, accounts: \"nobody\", access: read }")
        """
    }

    @Test func aRevokedGrantEndsARunningStream() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        let config = dir.sub("grants.yaml")
        try Files.write(Self.config(granted: true), to: config)
        let daemon = try E2E.spawning { try DaemonProcess(directory: dir.path, arguments: ["--config", config]) }
        let root = try daemon.client()
        try #require(try root.callOne("switch shared-1").error == nil)
        let insert =
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) INSERT INTO app_data(key, value) SELECT i, printf('%0100d', i) FROM n"
        try #require(try root.callOne(DataCalls.execute("shared-1", [(insert, [])])).error == nil)

        // nobody streams every row into a pipe that is not read for a while: its client, and
        // so the stream, wait with most of the rows unsent.
        let out = dir.sub("rows.json"), errors = dir.sub("errors.txt")
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/sh")
        reader.arguments = [
            "-c",
            "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups '\(Binaries.accountctl)' --socket '\(daemon.socket)' --json query --account shared-1 'SELECT key, value FROM app_data' 2>'\(errors)' | (sleep 4; cat > '\(out)')",
        ]
        try E2E.spawning { try reader.run() }
        Thread.sleep(forTimeInterval: 1.5)

        // The grant goes, by reload.
        try Files.write(Self.config(granted: false), to: config)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 10) { daemon.log.contains("reload done") }, "\(daemon.log.suffix(2000))")

        reader.waitUntilExit()
        let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(stderr.contains("PermissionDenied"), "\(stderr)")
        let lines = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n")
        #expect(lines.count > 1 && lines.count < 200_001, "\(lines.count) rows reached the revoked reader")
        #expect(!lines.contains { $0.contains("rowCount") }, "the stream did not end as if whole")
        #expect(daemon.log.contains("refused Query from uid 65534"), "the refusal is logged with the uid")
    }
}
