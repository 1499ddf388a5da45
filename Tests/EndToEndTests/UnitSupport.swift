import AccountdTestSupport
import Foundation
import Testing

/// A systemd unit as `make install` renders it, and what systemd would run for it, so a test
/// can run a unit's own command line where systemd is not PID 1.
struct UnitFile {
    let path: String
    let text: String

    /// `systemd/<name>` of the repository, with `@BINDIR@` replaced (as `make install` does)
    /// and written to `folder` under its installed name (without `.in`).
    static func render(_ name: String, into folder: String, bindir: String = Binaries.directory) throws -> UnitFile {
        let source = Repository.root + "/systemd/" + name
        var text = try String(contentsOfFile: source, encoding: .utf8)
        text = text.replacingOccurrences(of: "@BINDIR@", with: bindir)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = URL(fileURLWithPath: name).lastPathComponent
        let installed = folder + "/" + (file.hasSuffix(".in") ? String(file.dropLast(3)) : file)
        try Files.write(text, to: installed)
        return UnitFile(path: installed, text: text)
    }

    /// Every value of `key=` in the unit, in order (`ListenStream`, `ExecStart`, ...).
    func values(_ key: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            line.hasPrefix(key + "=") ? String(line.dropFirst(key.count + 1)) : nil
        }
    }

    /// The one value of `key=`; fails the test when there is not exactly one.
    func value(_ key: String) throws -> String {
        let found = values(key)
        try #require(found.count == 1, "\(path): \(found.count) \(key)= lines")
        return found[0]
    }

    /// `text` with systemd's specifiers replaced as they would be for this machine's test
    /// folder: `%i` the instance, `%E` the configuration root, `%S` the state root, `%t` the
    /// runtime root (for the system manager /etc, /var/lib and /run; here folders of the test).
    static func expand(_ text: String, instance: String = "", roots: Roots) -> String {
        text.replacingOccurrences(of: "%i", with: instance)
            .replacingOccurrences(of: "%E", with: roots.configuration)
            .replacingOccurrences(of: "%S", with: roots.state)
            .replacingOccurrences(of: "%t", with: roots.runtime)
    }

    /// Stand-ins for /etc, /var/lib and /run (or a user's ~/.config, ~/.local/state and $XDG_RUNTIME_DIR).
    struct Roots {
        var configuration: String
        var state: String
        var runtime: String

        init(under folder: String) throws {
            configuration = folder + "/etc"
            state = folder + "/state"
            runtime = folder + "/run"
            for path in [configuration, state, runtime] {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            }
        }
    }

    /// `systemd-analyze verify` of `paths` (and `--user` for user units): its standard error,
    /// which is empty when every unit is sound.
    static func verify(_ paths: [String], user: Bool = false, runtime: String? = nil, man: Bool = false, environment: [String: String] = [:])
        throws -> (status: Int32, stderr: String)
    {
        var arguments = ["verify", "--man=\(man ? "yes" : "no")"] + paths
        if user { arguments.insert("--user", at: 0) }
        var environment = environment
        environment["PATH"] = "/usr/bin:/bin"
        if let runtime { environment["XDG_RUNTIME_DIR"] = runtime }
        let result = try E2E.run("/usr/bin/systemd-analyze", arguments, environment: environment)
        return (result.status, result.stderr)
    }

    static var canVerify: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") }
}

/// A daemon started from a unit's command line, with the environment systemd sets for the
/// unit's directories (`STATE_DIRECTORY`, `RUNTIME_DIRECTORY`, `CONFIGURATION_DIRECTORY`).
///
/// It binds its sockets itself, at their defaults under `RUNTIME_DIRECTORY`, which are the
/// socket units' `ListenStream=` paths (the tests check they agree); adopting sockets systemd
/// passes is `SystemdTests`' part. (Not under `systemd-socket-activate`: it closes every other
/// descriptor as it starts the daemon, which makes Foundation's `Process` wait for that child
/// on the thread that notices every child's exit, so two of them at once deadlock a test run.)
final class ActivatedDaemon {
    let process: Process
    let line: String
    let varlink: String
    let log: String

    /// - Parameters:
    ///   - command: the unit's `ExecStart=`, specifiers expanded, split on spaces.
    ///   - line, varlink: where the socket units listen; the daemon must answer there.
    ///   - asUID: run as this uid and gid (`setpriv`), sockets bound by it too; nil for ourselves.
    init(command: [String], line: String, varlink: String, environment: [String: String], log: String, asUID uid: Int? = nil) throws {
        self.line = line
        self.varlink = varlink
        self.log = log
        var program = command[0]
        var arguments = Array(command.dropFirst())
        if let uid {
            arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", program] + arguments
            program = "/usr/bin/setpriv"
        }
        var environment = environment
        environment["PATH"] = "/usr/bin:/bin"
        process = try E2E.spawning { try SystemdSupport.start(program, arguments, environment: environment, log: log) }
        let answered = waitUntil(timeout: 30) {
            guard process.isRunning, SystemdSupport.identity(of: varlink)?.isSocket == true else { return false }
            return (try? RawClient(socket: line).callOne("ping")).map { $0.error == nil } ?? false
        }
        if !answered {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw SystemdTestError("the unit's command line did not answer on \(line) and \(varlink): \(SystemdSupport.tail(log))")
        }
    }

    func client() throws -> RawClient { try RawClient(socket: line) }

    /// SIGTERM, then the exit status (nil when it had to be killed).
    func stop() -> Int32? { SystemdSupport.stop(process, timeout: 30).status }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
