import AccountdProtocol
import ArgumentParser

/// `accountctl info`: what daemon is on the socket.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show the daemon's version, process, data root and schema bundle.")

    @OptionGroup var global: GlobalOptions

    func run() throws {
        let info = try global.connect().call(.info)
        if global.json { return Output.json(info) }
        let bundle = info["bundle"] ?? .null
        Output.fields([
            ("product", Output.text(info["product"])),
            ("version", Output.text(info["version"])),
            ("protocol", Output.text(info["protocol"])),
            ("pid", Output.text(info["pid"])),
            ("uptime", Self.uptime(info["uptimeSeconds"])),
            ("data root", Output.text(info["dataRoot"])),
            ("bundle version", Output.text(bundle["version"])),
            ("bundle fingerprint", Output.text(bundle["fingerprint"])),
            ("socket", global.socketPath),
        ])
    }

    /// `3d 4h 5m 6s`, from seconds.
    static func uptime(_ value: JSONValue?) -> String {
        let seconds: Int64
        switch value {
        case .int(let number)?: seconds = number
        case .double(let number)?: seconds = Int64(number)
        default: return "-"
        }
        let parts: [(Int64, String)] = [
            (seconds / 86_400, "d"), (seconds / 3_600 % 24, "h"), (seconds / 60 % 60, "m"), (seconds % 60, "s"),
        ]
        let shown = parts.drop { $0.0 == 0 && $0.1 != "s" }
        return shown.map { "\($0.0)\($0.1)" }.joined(separator: " ")
    }
}
