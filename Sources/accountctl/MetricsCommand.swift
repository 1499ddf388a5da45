import AccountdClient
import AccountdProtocol
import ArgumentParser
import Foundation

/// `accountctl metrics [--textfile PATH]`: the daemon's metrics, in Prometheus text format.
struct MetricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print the daemon's metrics in Prometheus text format.",
        discussion: """
            Prints the text exactly as the daemon made it. With --textfile PATH, writes it \
            to PATH for node_exporter's textfile collector instead: into a temporary file \
            beside it, then renamed over it, so the collector never reads half a file. When \
            the daemon does not answer, PATH gets `accountd_up 0` (and the time it was \
            written) rather than keeping the last good text, so an alert on accountd_up \
            fires, and the command exits 1 (systemd/accountd-metrics.service runs this). \
            A daemon that accepts the connection but does not answer within --timeout \
            seconds (hung) counts as down too. A daemon that answers with \
            TooManyConnections (every connection taken, the admins' reserve too) is up: PATH \
            gets `accountd_up 1` and `accountd_metrics_refused 1` instead, and the command \
            exits 1. \
            With --json, prints the reply's parameters, {"text": ...}.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp("Write the text to this file (atomically), `accountd_up 0` when the daemon is down.", valueName: "path"))
    var textfile: String?

    @Option(
        help: ArgumentHelp(
            "With --textfile: seconds to wait for the answer before writing `accountd_up 0` (more than 0, at most 3600).", valueName: "seconds"))
    var timeout: Double = 10

    /// The one rule for `--timeout`, said as it is checked: more than 0 (no wait at all would
    /// write `accountd_up 0` before any daemon could answer), at most an hour.
    func validate() throws {
        guard timeout.isFinite, timeout > 0, timeout <= 3600 else {
            throw ValidationError(
                "--timeout must be a number of seconds more than 0 and at most 3600 (0 would write accountd_up 0 before the daemon could answer)")
        }
    }

    func run() async throws {
        guard let textfile else {
            let text = try await global.connect().metrics()
            if global.json { return Output.json(MetricsReply(text: text).parameters) }
            print(text, terminator: "")
            return
        }
        // A hung daemon may never answer, and a blocked read may not heed cancellation: the
        // timer writes the down file and ends the process itself.
        let (path, seconds) = (textfile, timeout)
        let timer = Task.detached {
            try await Task.sleep(for: .seconds(seconds))
            try? Self.replace(path, with: Self.down(at: Date()))
            FileHandle.standardError.write(Data("accountctl: the daemon did not answer within \(seconds) s; wrote accountd_up 0 to \(path)\n".utf8))
            Foundation.exit(1)
        }
        defer { timer.cancel() }
        let text: String
        var failure: (any Error)?
        do {
            text = try await global.connect().metrics()
        } catch let error as AccountdClientError where error.errorName == .tooManyConnections {
            // It answered: it runs, with every connection taken.
            try Self.replace(textfile, with: Self.refused(at: Date()))
            throw ClientError.failed(
                "the daemon refused the metrics request (\(error)); wrote accountd_up 1 and accountd_metrics_refused 1 to \(textfile)")
        } catch {
            failure = error
            text = Self.down(at: Date())
        }
        try Self.replace(textfile, with: text)
        if let failure {
            throw ClientError.failed("the daemon did not answer (\(failure)); wrote accountd_up 0 to \(textfile)")
        }
    }

    /// The text written when the daemon does not answer: `accountd_up 0`, and when.
    static func down(at now: Date) -> String {
        """
        # HELP accountd_up Whether accountd answered the metrics request (0: it did not).
        # TYPE accountd_up gauge
        accountd_up 0
        # HELP accountd_metrics_timestamp_seconds When this text was made, in seconds since the epoch.
        # TYPE accountd_metrics_timestamp_seconds gauge
        accountd_metrics_timestamp_seconds \(Int(now.timeIntervalSince1970))

        """
    }

    /// The text written when the daemon answers with `TooManyConnections`: it is up, every
    /// connection is taken (the admins' reserve, `limits.adminReservedConnections`, too), and
    /// no other figure could be read.
    static func refused(at now: Date) -> String {
        """
        # HELP accountd_up Whether accountd answered the metrics request (0: it did not).
        # TYPE accountd_up gauge
        accountd_up 1
        # HELP accountd_metrics_refused 1: accountd answered the metrics request with TooManyConnections (every connection is taken, the admins' reserve too).
        # TYPE accountd_metrics_refused gauge
        accountd_metrics_refused 1
        # HELP accountd_metrics_timestamp_seconds When this text was made, in seconds since the epoch.
        # TYPE accountd_metrics_timestamp_seconds gauge
        accountd_metrics_timestamp_seconds \(Int(now.timeIntervalSince1970))

        """
    }

    /// Writes `text` to a temporary file beside `path` (a name that does not end in
    /// `.prom`, which the collector skips), mode 0644, then renames it over `path`.
    static func replace(_ path: String, with text: String) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        do {
            try Data(text.utf8).write(to: temporary)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: temporary.path)
            guard rename(temporary.path, path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw ClientError.failed("cannot write \(path): \(error)")
        }
    }
}
