import AccountdDaemon
import ArgumentParser
import Foundation
import Logging

/// `accountd [serve]`: run the daemon in the foreground.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the daemon in the foreground (the default).",
        discussion: """
            Settings come from, highest first: these flags, environment variables (ACCOUNTD_DATA_ROOT, \
            ACCOUNTD_SOCKET_PATH, ACCOUNTD_SOCKET_VARLINK, ACCOUNTD_SCHEMA_DIR, ACCOUNTD_LOG_LEVEL, ...), the config file, and built-in \
            defaults that follow systemd's STATE_DIRECTORY, RUNTIME_DIRECTORY and CONFIGURATION_DIRECTORY.
            """)

    @Option(help: "The YAML config file (default: $CONFIGURATION_DIRECTORY/accountd.yaml or /etc/accountd/accountd.yaml).", completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @Option(help: "The data root, holding accounts/, snapshots/ and state.json.", completion: .directory)
    var dataRoot: String?

    @Option(help: "The Unix socket to listen on (ignored under socket activation).", completion: .file())
    var socket: String?

    @Option(
        help: "The varlink socket to listen on (default: $RUNTIME_DIRECTORY/io.accountd, else io.accountd beside --socket; ignored when systemd passes one).",
        completion: .file())
    var varlinkSocket: String?

    @Option(help: "The schema bundle folder (default: share/accountd/schema beside the folder holding accountd: /usr/share/accountd/schema for /usr/bin/accountd).", completion: .directory)
    var schema: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    func run() async throws {
        let loader = SettingsLoader(
            flags: .init(
                config: config, dataRoot: dataRoot, socket: socket, varlinkSocket: varlinkSocket, schema: schema, logLevel: logLevel))
        let settings: DaemonSettings
        do {
            settings = try await loader.load()
        } catch {
            FileHandle.standardError.write(Data("accountd: \(error)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }
        LoggingSetup.bootstrap(level: settings.logLevel)
        let logger = Logger(label: "accountd")
        do {
            try await Daemon.run(settings: settings, loader: loader, logger: logger)
        } catch {
            logger.critical("accountd cannot start: \(error)")
            throw ExitCode(1)
        }
    }
}
