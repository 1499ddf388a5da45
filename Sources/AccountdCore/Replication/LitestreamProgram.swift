import Foundation
import Synchronization

/// The `litestream` program, run as a child process for the commands accountd needs
/// from it (`litestream restore`).
///
/// accountd never links Litestream in: it writes Litestream's configuration, runs its
/// program, and reads its control socket (``LitestreamControl``), so the Litestream that
/// replicates is the operator's, upgraded on its own.
public struct LitestreamProgram: Sendable {
    /// The program: a path, or a name looked up on `PATH`.
    public var executable: String

    /// What a run of the program left.
    public struct Run: Sendable {
        public var status: Int32
        public var output: String
        public var errors: String
    }

    public init(executable: String = "litestream") {
        self.executable = executable
    }

    /// The program's path: `executable` itself when it holds a `/`, else the first match on `PATH`.
    public func resolvedPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if executable.contains("/") { return FileManager.default.isExecutableFile(atPath: executable) ? executable : nil }
        for folder in (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let candidate = folder + "/" + executable
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The environment Litestream runs with: this process's, without `AWS_CA_BUNDLE`.
    /// Litestream 0.5's S3 client refuses to start when that variable is set ("unable to add
    /// custom RootCAs HTTPClient"), and many machines set it for other programs.
    public static func environment(_ base: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        var environment = base
        environment["AWS_CA_BUNDLE"] = nil
        return environment
    }

    /// Runs the program with `arguments` and waits for it to end. Blocking: call it on a
    /// thread that may wait.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the program cannot be found or started.
    public func run(_ arguments: [String]) throws -> Run {
        guard let path = resolvedPath() else {
            throw AccountdError(
                .storage,
                "the litestream program '\(executable)' was not found; install Litestream 0.5 or set replication.litestream.program to its path")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = Self.environment()
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw AccountdError(.storage, "starting \(path) failed: \(ErrorText.of(error))")
        }
        // Read both pipes to their ends before waiting, so that a full pipe never stalls the child.
        let errorData = Mutex<Data>(Data())
        let errorsRead = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            errorData.withLock { $0 = data }
            errorsRead.signal()
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        errorsRead.wait()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
            errors: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
    }
}
