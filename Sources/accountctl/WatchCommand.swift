import AccountdProtocol
import ArgumentParser

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `accountctl watch`: follow the daemon's events until interrupted.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print the daemon's events as they happen, until interrupted.",
        discussion: """
            One line per event: the local time, the event (switched, migration or \
            changed), then its fields as key=value. With --json, each event's raw \
            parameters. Every line is flushed at once, so the output can be piped. \
            Stop it with Ctrl-C.
            """)

    @OptionGroup var global: GlobalOptions

    func run() throws {
        let connection = try global.connect()
        let last = try connection.stream(.watch) { event in
            if global.json {
                Output.json(event)
            } else {
                print(Self.describe(event))
            }
            Output.flush()
        }
        // The daemon ends a watch only when it stops; show what it said last.
        if global.json { Output.json(last) } else if last != .object([]) { print(Self.describe(last)) }
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
