import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl metrics`: the daemon's metrics, in Prometheus text format.
struct MetricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print the daemon's metrics in Prometheus text format.",
        discussion: """
            Prints the text exactly as the daemon made it, so that node_exporter's textfile \
            collector can read it as it is: `accountctl metrics > accountd.prom.tmp && mv \
            accountd.prom.tmp accountd.prom` (systemd/accountd-metrics.timer does this). \
            With --json, prints the reply's parameters, {"text": ...}.
            """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let text = try await global.connect().metrics()
        if global.json { return Output.json(MetricsReply(text: text).parameters) }
        print(text, terminator: "")
    }
}
