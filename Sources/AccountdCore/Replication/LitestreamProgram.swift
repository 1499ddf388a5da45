import Foundation
import Subprocess

#if canImport(System)
import System
#else
import SystemPackage
#endif

/// The `litestream` program, run as a child process for the commands accountd needs
/// from it (`litestream restore`).
///
/// accountd never links Litestream in: it writes Litestream's configuration, runs its
/// program, and reads its control socket (``LitestreamControl``), so the Litestream that
/// replicates is the operator's, upgraded on its own. The child is started, read and
/// waited for by swift-subprocess: no thread of accountd's waits for it.
public struct LitestreamProgram: Sendable {
    /// The program: a path, or a name looked up on `PATH`.
    public var executable: String

    /// The most bytes kept of each of the program's outputs; a `litestream restore` prints
    /// one line of JSON, and its errors a few lines.
    static let outputLimit = 4 << 20

    /// What a run of the program left.
    public struct Run: Sendable {
        /// The exit status, or 128 plus the signal that ended the program.
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
    /// custom RootCAs HTTPClient"), and many machines set it for other programs. ``run(_:)``
    /// starts every run with it (`.inherit.updating(["AWS_CA_BUNDLE": nil])`).
    public static func environment(_ base: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        var environment = base
        environment["AWS_CA_BUNDLE"] = nil
        return environment
    }

    /// Runs the program with `arguments`, its standard input empty and its environment this
    /// process's without `AWS_CA_BUNDLE` (``environment(_:)``), and returns once it has ended
    /// and both its outputs are read to their ends.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the program cannot be found or started,
    ///   or prints more than ``outputLimit`` bytes on either output.
    public func run(_ arguments: [String]) async throws -> Run {
        // Finding, starting and reaping the program are system calls that may take a moment:
        // never on the caller's executor, which may be a connection's event loop.
        try await withTaskExecutorPreference(globalConcurrentExecutor) { try await runHere(arguments) }
    }

    private func runHere(_ arguments: [String]) async throws -> Run {
        guard let path = resolvedPath() else {
            throw AccountdError(
                .storage,
                "the litestream program '\(executable)' was not found; install Litestream 0.5 or set replication.litestream.program to its path")
        }
        let result: ExecutionResult<Void, StringOutput<UTF8>, StringOutput<UTF8>>
        do {
            result = try await Subprocess.run(
                .path(FilePath(path)), arguments: Arguments(arguments),
                environment: .inherit.updating(["AWS_CA_BUNDLE": nil]), input: .none,
                output: .string(limit: Self.outputLimit), error: .string(limit: Self.outputLimit))
        } catch {
            throw AccountdError(.storage, "running \(path) failed: \(ErrorText.of(error))")
        }
        let status: Int32
        switch result.terminationStatus {
        case .exited(let code): status = Int32(code)
        case .signaled(let signal): status = 128 + Int32(signal)
        }
        return Run(status: status, output: result.standardOutput, errors: result.standardError)
    }
}
