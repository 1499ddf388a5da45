import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Where settings come from, as the README says: flags over environment over the config file
/// over built-in defaults, and defaults that follow systemd's `STATE_DIRECTORY`,
/// `RUNTIME_DIRECTORY` and `CONFIGURATION_DIRECTORY`.
@Suite struct SettingsTests {
    /// Starts accountd with exactly `arguments` and `environment` (nothing inherited), waits until
    /// it answers on `socket`, and returns its `Info`; the daemon is stopped again.
    static func info(
        _ arguments: [String], environment: [String: String], socket: String, log: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> JSONValue {
        let process = try E2E.spawning {
            try SystemdSupport.start(Binaries.accountd, arguments, environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }, log: log)
        }
        defer { E2E.stop(process, signal: SIGKILL, timeout: 10) }
        try #require(
            E2E.waitUntilServing(process, socket: socket), "accountd did not serve on \(socket): \(SystemdSupport.tail(log))",
            sourceLocation: sourceLocation)
        let info = try RawClient(socket: socket).callOne("info").parameters
        #expect(E2E.stop(process, timeout: 30) == 0, sourceLocation: sourceLocation)
        return info
    }

    /// `data.root` set at all four levels, then one level fewer each time: the highest one given wins.
    @Test func flagsOverEnvironmentOverConfigFileOverDefaults() throws {
        let dir = TestDirectory()
        let socket = dir.sub("accountd.sock")
        let config = dir.sub("accountd.yaml")
        try Files.write("data:\n  root: \(dir.sub("from-yaml"))\n", to: config)
        let base = ["--socket", socket, "--schema", Repository.sampleBundle, "--config", config]
        // The built-in default for data.root follows STATE_DIRECTORY.
        let defaults = ["STATE_DIRECTORY": dir.sub("from-default")]
        let levels: [(String, [String], [String: String])] = [
            ("from-flag", base + ["--data-root", dir.sub("from-flag")], defaults.merging(["ACCOUNTD_DATA_ROOT": dir.sub("from-env")]) { $1 }),
            ("from-env", base, defaults.merging(["ACCOUNTD_DATA_ROOT": dir.sub("from-env")]) { $1 }),
            ("from-yaml", base, defaults),
        ]
        let names = levels.map(\.0) + ["from-default"]
        /// The data roots made so far: the winners' only, never a level that lost.
        func made() -> [String] { names.filter { FileManager.default.fileExists(atPath: dir.sub($0) + "/accounts") } }
        for (index, (winner, arguments, environment)) in levels.enumerated() {
            let info = try Self.info(arguments, environment: environment, socket: socket, log: dir.sub("\(winner).log"))
            #expect(info["dataRoot"] == .string(dir.sub(winner)), "expected \(winner): \(info)")
            #expect(made() == Array(names.prefix(index + 1)), "\(winner) won, yet these were made: \(made())")
        }
        // No data.root in the config file: the default.
        try Files.write("log:\n  level: debug\n", to: config)
        let info = try Self.info(base, environment: defaults, socket: socket, log: dir.sub("from-default.log"))
        #expect(info["dataRoot"] == .string(dir.sub("from-default")), "\(info)")
        #expect(made() == names)
    }

    /// With only systemd's three directories set, the data root is `STATE_DIRECTORY`, the socket is
    /// `RUNTIME_DIRECTORY/accountd.sock`, and the config file `CONFIGURATION_DIRECTORY/accountd.yaml`
    /// is read (it names the schema bundle, which has no other source here). Of a `:`-separated
    /// list, the first directory is used, as systemd lists them.
    @Test func aSocketInAFolderThatDoesNotExistIsRefusedSayingWhy() throws {
        let dir = TestDirectory()
        let result = try E2E.run(
            Binaries.accountd,
            ["--config", "/dev/null", "--data-root", dir.sub("data"), "--socket", dir.sub("missing/accountd.sock"), "--schema", Repository.sampleBundle])
        #expect(result.status != 0)
        // The line socket and the varlink socket beside it start together; either may say so first.
        #expect(result.stderr.contains("its folder \(dir.sub("missing")) does not exist; create it, or choose another --"), "\(result.stderr)")
    }

    @Test func systemdDirectoriesGiveTheDefaults() throws {
        let dir = TestDirectory()
        let state = dir.sub("state")
        let runtime = dir.sub("runtime")
        let configuration = dir.sub("etc")
        for folder in [state, runtime, configuration] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        try Files.write("schema:\n  dir: \(Repository.sampleBundle)\n", to: configuration + "/accountd.yaml")
        let environment = [
            "STATE_DIRECTORY": state + ":" + dir.sub("second-state"), "RUNTIME_DIRECTORY": runtime,
            "CONFIGURATION_DIRECTORY": configuration,
        ]
        let socket = runtime + "/accountd.sock"
        let info = try Self.info([], environment: environment, socket: socket, log: dir.sub("accountd.log"))
        #expect(info["dataRoot"] == .string(state), "\(info)")
        #expect(FileManager.default.fileExists(atPath: state + "/accounts"))
        #expect(!FileManager.default.fileExists(atPath: dir.sub("second-state")))
        #expect(info["bundle"]?["version"] == 3, "the schema bundle named in $CONFIGURATION_DIRECTORY/accountd.yaml was not used: \(info)")
        let log = try String(contentsOfFile: dir.sub("accountd.log"), encoding: .utf8)
        #expect(log.contains("listening on \(socket)"), "\(log.suffix(1500))")
    }
}
