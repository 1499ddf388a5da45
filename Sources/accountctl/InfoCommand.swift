import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl info`: what daemon is on the socket.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show the daemon's version, process, data root and schema bundle.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let info = try await global.connect().info()
        if global.json { return Output.json(info.parameters) }
        Output.fields([
            ("product", info.product),
            ("version", info.version),
            ("protocol", String(info.protocolVersion)),
            ("pid", String(info.pid)),
            ("uptime", Self.uptime(Int64(info.uptimeSeconds))),
            ("data root", info.dataRoot),
            ("bundle version", String(info.bundle.version)),
            ("bundle fingerprint", info.bundle.fingerprint),
            ("socket", global.socketPath),
        ])
    }

    /// `3d 4h 5m 6s`, from seconds.
    static func uptime(_ seconds: Int64) -> String {
        let parts: [(Int64, String)] = [
            (seconds / 86_400, "d"), (seconds / 3_600 % 24, "h"), (seconds / 60 % 60, "m"), (seconds % 60, "s"),
        ]
        let shown = parts.drop { $0.0 == 0 && $0.1 != "s" }
        return shown.map { "\($0.0)\($0.1)" }.joined(separator: " ")
    }
}
