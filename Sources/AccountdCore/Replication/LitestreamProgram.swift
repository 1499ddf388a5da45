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
///
/// Every run has a deadline (``timeout``, `replication.litestream.commandTimeoutSeconds`):
/// Litestream's S3 client retries a store that does not answer (or refuses connections)
/// without end, so a run past its deadline is killed and throws. With ``runs``, a daemon's
/// shutdown kills the runs in progress at once (``LitestreamRuns/stopAll()``).
public struct LitestreamProgram: Sendable {
    /// The program: a path, or a name looked up on `PATH`.
    public var executable: String

    /// How long a run may take before it is killed (``defaultTimeout`` unless set).
    public var timeout: Duration

    /// The registry a daemon's shutdown stops the runs through; nil for a run no shutdown stops.
    public var runs: LitestreamRuns?

    /// The user and group every run is started as; nil for this process's own.
    /// ``DataRoot/foreignOwner()``: an offline tool run as root on another user's data root
    /// runs Litestream as that user, so it writes nothing that user could not.
    public var user: User?

    /// A user and group to run Litestream as (its only group: root's supplementary groups
    /// are dropped).
    public struct User: Sendable, Equatable {
        public var uid: uid_t
        public var gid: gid_t

        public init(uid: uid_t, gid: gid_t) {
            self.uid = uid
            self.gid = gid
        }
    }

    /// The deadline of a run when none is set: ten minutes, in which Litestream restores
    /// gigabytes from an object store that answers (docs/PERFORMANCE.md).
    public static let defaultTimeout: Duration = .seconds(600)

    /// The most a listing of the replica (`litestream ltx`, a dry run), which moves no data,
    /// may take, whatever ``timeout`` says: 30 seconds.
    public static let listingTimeout: Duration = .seconds(30)

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

    public init(executable: String = "litestream", timeout: Duration = defaultTimeout, runs: LitestreamRuns? = nil, user: User? = nil) {
        self.executable = executable
        self.timeout = timeout
        self.runs = runs
        self.user = user
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

    /// How a run ended: by itself, at its deadline, or stopped by shutdown.
    private enum Ending: Sendable {
        case ran(Run)
        case deadline
        case stopped
    }

    /// Runs the program with `arguments`, its standard input empty and its environment this
    /// process's without `AWS_CA_BUNDLE` (``environment(_:)``), and returns once it has ended
    /// and both its outputs are read to their ends, or kills it at its deadline (``timeout``,
    /// or `limit` when shorter) or when ``runs`` stops every run.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the program cannot be found or started,
    ///   prints more than ``outputLimit`` bytes on either output, does not end by its deadline,
    ///   or is stopped by shutdown; the child is gone by then.
    public func run(_ arguments: [String], within limit: Duration? = nil) async throws -> Run {
        let limit = limit.map { min($0, timeout) } ?? timeout
        let command = "litestream " + (arguments.first ?? "")
        if runs?.stopping == true { throw Self.stopped(command) }
        let enrolled = runs?.enrol()
        defer { if let enrolled { runs?.leave(enrolled.0) } }
        // Finding, starting and reaping the program are system calls that may take a moment:
        // never on the caller's executor, which may be a connection's event loop.
        let ending = try await withTaskExecutorPreference(globalConcurrentExecutor) {
            try await withThrowingTaskGroup(of: Ending.self) { group in
                // Cancelled, swift-subprocess kills the child and reaps it.
                group.addTask { .ran(try await runHere(arguments)) }
                group.addTask {
                    try? await Task.sleep(for: limit)
                    return Task.isCancelled ? .stopped : .deadline
                }
                if let stop = enrolled?.1 {
                    group.addTask {
                        for await _ in stop {}
                        return .stopped
                    }
                }
                let first = try await group.next() ?? .stopped
                group.cancelAll()
                return first
            }
        }
        switch ending {
        case .ran(let run):
            return run
        case .deadline:
            let bound = limit < timeout ? "a look at the replica, which moves no data, has \(Self.seconds(limit)) s at most" : "replication.litestream.commandTimeoutSeconds"
            throw AccountdError(
                .storage,
                "\(command) did not finish within \(Self.seconds(limit)) s and was stopped (\(bound)): the replica's store does not answer, or answers too slowly. What it had begun was discarded; check the store (and its address), or raise the setting, then try again")
        case .stopped:
            throw Self.stopped(command)
        }
    }

    /// The error of a run that shutdown stopped, or refused to start.
    private static func stopped(_ command: String) -> AccountdError {
        AccountdError(
            .storage, "\(command) was stopped because accountd is shutting down; what it had begun was discarded. Try again once accountd is back")
    }

    /// util-linux's `setpriv`, which starts another user's Litestream.
    static let setpriv = "/usr/bin/setpriv"

    /// `duration` in seconds, as messages show it: `3`, `0.5`.
    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? String(Int64(value)) : String(value)
    }

    private func runHere(_ arguments: [String]) async throws -> Run {
        guard let path = resolvedPath() else {
            throw AccountdError(
                .storage,
                "the litestream program '\(executable)' was not found; install Litestream 0.5 or set replication.litestream.program to its path")
        }
        // Another user's Litestream is started through util-linux's `setpriv`, which changes
        // its groups and user in a process of its own before it execs Litestream. Asked to do
        // it itself, swift-subprocess 1.0.2 forks with a raw clone3 and then calls setgroups,
        // setgid and signal in the child, which glibc may leave waiting forever on a lock
        // another thread held (swift-subprocess issue 374: an offline pull hung here).
        var (program, programArguments) = (path, arguments)
        if let user {
            guard FileManager.default.isExecutableFile(atPath: Self.setpriv) else {
                throw AccountdError(
                    .storage, "running Litestream as uid \(user.uid) needs \(Self.setpriv) (util-linux), which is not installed; install util-linux")
            }
            (program, programArguments) = (Self.setpriv, ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--groups=\(user.gid)", "--", path] + arguments)
        }
        let result: ExecutionResult<Void, StringOutput<UTF8>, StringOutput<UTF8>>
        do {
            result = try await Subprocess.run(
                .path(FilePath(program)), arguments: Arguments(programArguments),
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
