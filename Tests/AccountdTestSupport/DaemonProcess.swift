import Foundation

/// A real `accountd` process on a temporary data root and socket.
public final class DaemonProcess {
    public let directory: String
    public let dataRoot: String
    public let socket: String
    public let bundle: String
    public private(set) var process: Process
    private let arguments: [String]
    private let environment: [String: String]
    private let waitForSavedAccount: Bool

    /// Starts accountd and waits until its socket answers.
    ///
    /// - Parameters:
    ///   - directory: a folder of the test's own; the data root and socket go inside.
    ///   - bundle: the schema bundle (default: the sample bundle).
    ///   - environment: extra environment variables.
    ///   - waitForSavedAccount: also wait until start-up is done opening the saved active
    ///     account (`Status` no longer says `opening`), as the tests that restart expect.
    public init(
        directory: String, bundle: String = Repository.sampleBundle, arguments: [String] = [], environment: [String: String] = [:],
        waitForSavedAccount: Bool = true
    ) throws {
        self.waitForSavedAccount = waitForSavedAccount
        self.directory = directory
        dataRoot = directory + "/data"
        socket = directory + "/accountd.sock"
        self.bundle = bundle
        self.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for key in env.keys where key.hasPrefix("ACCOUNTD_") || key.hasPrefix("LISTEN_") || key == "NOTIFY_SOCKET" { env[key] = nil }
        env.merge(environment) { $1 }
        self.environment = env
        process = Process()
        try start()
    }

    /// Arguments for a daemon whose clients are tasks of this test process: its idle timeout
    /// is an hour, not ten minutes. Swift Testing runs the whole suite's tests on a cooperative
    /// pool as wide as the machine's cores, and long synchronous end-to-end tests can keep a
    /// client's task from running for minutes on a loaded 2-core machine; the daemon would
    /// then close the client's connection as idle, which is not what such a test is about.
    public static func patientClients(in directory: String) throws -> [String] {
        let path = directory + "/patient.yaml"
        try Data("limits:\n  idleTimeoutSeconds: 3600\n".utf8).write(to: URL(fileURLWithPath: path))
        return ["--config", path]
    }

    /// The command line the daemon runs with.
    public var commandLine: [String] {
        ["--data-root", dataRoot, "--socket", socket, "--schema", bundle, "--config", directory + "/none.yaml", "--log-level", "debug"] + arguments
    }

    private func start() throws {
        FileManager.default.createFile(atPath: directory + "/none.yaml", contents: Data("{}\n".utf8))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.accountd)
        process.arguments = commandLine
        process.environment = environment
        let log = directory + "/accountd.log"
        if !FileManager.default.fileExists(atPath: log) { FileManager.default.createFile(atPath: log, contents: nil) }
        let handle = FileHandle(forWritingAtPath: log)!
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        try waitUntilReady()
    }

    /// Waits until the socket accepts a connection and answers Ping.
    public func waitUntilReady(timeout: TimeInterval = 60) throws {
        let settled = waitUntil(timeout: timeout, interval: 0.02) {
            guard process.isRunning else { return true }
            guard let client = try? RawClient(socket: socket) else { return false }
            guard (try? client.callOne("ping"))?.error == nil else { return false }
            // The daemon listens at once and opens the saved active account in the background.
            return !waitForSavedAccount || (try? client.callOne("status"))?.parameters["state"] != "opening"
        }
        if !process.isRunning { throw RawClient.ClientError(message: "accountd exited with \(process.terminationStatus): \(log)") }
        guard settled else { throw RawClient.ClientError(message: "accountd did not become ready: \(log)") }
    }

    /// Sends `signal` and waits for the exit; returns the exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, signal)
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    /// Stops (SIGTERM) and starts again with the same settings.
    public func restart() throws {
        stop()
        try start()
    }

    /// A new raw client.
    public func client() throws -> RawClient { try RawClient(socket: socket) }

    /// What the daemon logged so far.
    public var log: String { (try? String(contentsOfFile: directory + "/accountd.log", encoding: .utf8)) ?? "" }

    /// `accounts/<name>.sqlite` under the data root.
    public func accountPath(_ name: String) -> String { dataRoot + "/accounts/" + name + ".sqlite" }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Runs `accountctl` and returns its exit status, standard output and standard error.
public func runAccountctl(
    _ arguments: [String], socket: String, environment: [String: String] = [:], stdin: Data? = nil
) throws -> (status: Int32, stdout: String, stderr: String) {
    try runProgram(Binaries.accountctl, ["--socket", socket] + arguments, environment: environment)
}

/// Runs a program to completion and collects its output; its standard input is
/// `standardInput` (nothing, by default).
public func runProgram(
    _ path: String, _ arguments: [String], environment: [String: String] = [:], standardInput: FileHandle = FileHandle.nullDevice
) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    env.merge(environment) { $1 }
    process.environment = env
    // Output goes to files, not pipes, so a chatty program can never block on a full pipe.
    let base = NSTemporaryDirectory() + "/accountd-run-\(UUID().uuidString)"
    FileManager.default.createFile(atPath: base + ".out", contents: nil)
    FileManager.default.createFile(atPath: base + ".err", contents: nil)
    defer {
        try? FileManager.default.removeItem(atPath: base + ".out")
        try? FileManager.default.removeItem(atPath: base + ".err")
    }
    process.standardOutput = FileHandle(forWritingAtPath: base + ".out")
    process.standardError = FileHandle(forWritingAtPath: base + ".err")
    process.standardInput = standardInput
    try process.run()
    process.waitUntilExit()
    let outData = FileManager.default.contents(atPath: base + ".out") ?? Data()
    let errData = FileManager.default.contents(atPath: base + ".err") ?? Data()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}
