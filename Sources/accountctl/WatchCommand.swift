import AccountdClient
import AccountdProtocol
import ArgumentParser

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `accountctl watch`: follow the daemon's events until interrupted.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print the daemon's events as they happen, until interrupted.",
        discussion: """
            One line per event: the local time, the event (switched, migration, \
            changed, data, failed or missed), then its fields as key=value. With --json, each event's raw \
            parameters. Every line is flushed at once, so the output can be piped. \
            Stop it with Ctrl-C.
            """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        // The daemon ends a watch only when it stops (with ShuttingDown, an error).
        for try await event in try await global.connect().watch() {
            if global.json {
                Output.json(event.parameters)
            } else {
                print(Self.describe(event.parameters))
            }
            Output.flush()
        }
    }

    /// `12:03:04 switched account=alice previous=bob`.
    static func describe(_ event: JSONValue) -> String {
        var line = Self.clock() + " " + Output.text(event["event"])
        for (key, value) in event.objectValue ?? [] where key != "event" {
            line += " \(key)=" + Self.field(value)
        }
        return line
    }

    private static func field(_ value: JSONValue) -> String {
        guard case .string(let text) = value else { return Output.text(value) }
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F && $0 != "\"" }
        return plain ? text : value.serialized()
    }

    private static func clock() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        func two(_ number: Int32) -> String { number < 10 ? "0\(number)" : "\(number)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }
}
