import AccountdClient
import AccountdProtocol
import ArgumentParser

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `accountctl ping`: check that the daemon answers.
struct PingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ping",
        abstract: "Check that the daemon answers, and how fast.",
        discussion: "Exits 0 when it answers, 69 when the socket cannot be reached.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let client = try await global.connect()
        let start = Self.now()
        try await client.ping()
        let elapsed = Self.now() - start
        if global.json { return Output.json(EmptyReply().parameters) }
        print("accountd at \(client.socketPath) answered in \((elapsed * 10).rounded() / 10) ms")
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1_000_000
    }
}
