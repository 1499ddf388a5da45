import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A daemon killed (`kill -9`) during a pull (issue 33's third review, F-d): its `litestream
/// restore` child went on running and finished its staging file, and the configuration holding
/// the replica's password stayed in `tmp/` forever. The next start kills the child and removes
/// both. No Litestream needed: a stand-in plays a slow restore.
@Suite struct LitestreamLeftoverTests {
    static let password = "S3cret"

    /// A `litestream` stand-in for a restore of alice from a slow store: it records its pid,
    /// waits three seconds, then writes its output file (`-o`) and fails. Anything else (the
    /// start-up's look for device.sqlite) fails at once.
    static func writeSlowLitestream(at path: String) throws {
        try Files.write(
            """
            #!/bin/sh
            out=""
            while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
            case "$out" in */.alice.sqlite.pulling/alice.sqlite) ;; *) echo 'store unreachable' >&2; exit 1 ;; esac
            echo $$ > \(path).pid.tmp && mv \(path).pid.tmp \(path).pid
            i=0
            while [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
            echo finished > "$out"
            exit 1

            """, to: path)
        #expect(chmod(path, 0o755) == 0)
    }

    /// Whether `pid` runs (exists and is not a zombie).
    static func running(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return false }
        return !stat[close...].hasPrefix(") Z") && !stat[close...].hasPrefix(") X")
    }

    @Test func aRestartAfterAKillDuringAPullStopsTheChildAndRemovesItsFiles() throws {
        let dir = TestDirectory()
        let program = dir.sub("slow-litestream")
        try Self.writeSlowLitestream(at: program)
        var environment = E2E.replicationEnvironment(replica: "sftp://backup:\(Self.password)@127.0.0.1:1/accountd", runDirectory: dir.sub("run"))
        environment["ACCOUNTD_REPLICATION_LITESTREAM_PROGRAM"] = program
        try FileManager.default.createDirectory(atPath: dir.sub("host"), withIntermediateDirectories: true)
        let daemon = try E2E.daemon(directory: dir.sub("host"), environment: environment)
        let tmp = daemon.dataRoot + "/tmp"
        let pull = try E2E.spawning {
            try Binaries.start(Binaries.accountctl, ["--socket", daemon.socket, "pull", "alice"], logDirectory: dir.path)
        }
        defer { E2E.stop(pull, signal: SIGKILL, timeout: 10) }
        #expect(waitUntil(timeout: 20) { FileManager.default.fileExists(atPath: program + ".pid") }, "the pull never ran litestream: \(daemon.log.suffix(2000))")
        let child = try #require(Int32(try String(contentsOfFile: program + ".pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        let configs = Hostile.listing(tmp).filter { $0.hasPrefix("litestream-restore-") }
        #expect(configs.count == 1, "\(Hostile.listing(tmp))")
        for config in configs { #expect(Files.mode(tmp + "/" + config) == 0o600) }

        daemon.stop(signal: SIGKILL)
        try daemon.restart()
        // The child is gone, its configuration (with the password) too, and nothing it would have written appears.
        #expect(waitUntil(timeout: 5) { !Self.running(child) }, "the orphaned litestream \(child) still runs after the restart")
        #expect(Hostile.listing(tmp).filter { $0.contains("litestream-") }.isEmpty, "\(Hostile.listing(tmp))")
        Thread.sleep(forTimeInterval: 3.5)
        #expect(!Hostile.listing(daemon.dataRoot + "/accounts").contains(".alice.sqlite.pulling"), "\(Hostile.listing(daemon.dataRoot + "/accounts"))")
        #expect(daemon.log.contains("stopped 1 litestream child"), "\(daemon.log.suffix(2000))")
        if Self.running(child) { kill(child, SIGKILL) }
    }
}
