import AccountdProtocol
import Foundation

/// One `litestream` command about one database of a replica (`restore`, `ltx`), with the
/// replica's URL in a private configuration file rather than on Litestream's command line.
///
/// Every local user can read a command line (`ps`, `/proc/PID/cmdline`), and the URL may carry
/// a password. The file (0600, in the data root's 0700 `tmp/`) names a database that never
/// exists, only so that Litestream knows which replica is meant; it goes when the command ends,
/// and one left by a crash is removed by a later command an hour later or more. Litestream runs
/// without `AWS_CA_BUNDLE` (``LitestreamProgram/environment(_:)``).
public struct ReplicaCommand: Sendable {
    public var root: DataRoot
    public var litestream: LitestreamProgram

    public init(root: DataRoot, litestream: LitestreamProgram) {
        self.root = root
        self.litestream = litestream
    }

    /// The prefix of the configuration files written under `tmp/`.
    static let configPrefix = "litestream-replica-"

    /// Runs `litestream <arguments> -config FILE -no-expand-env ... DB` for the replica
    /// database at `source` (a full replica URL: `<base>/<account>.sqlite`): the configuration
    /// is written and removed on `blocking`, and Litestream is awaited (no thread waits for it).
    ///
    /// - Parameters:
    ///   - command: the subcommand, `restore` or `ltx`.
    ///   - options: its options, which go before the database.
    ///   - blocking: where the configuration file is written and removed.
    ///   - limit: a deadline shorter than the program's own (``LitestreamProgram/timeout``), if any.
    public func run(
        _ command: String, _ options: [String], source: String, within limit: Duration? = nil, on blocking: some BlockingRunner
    ) async throws -> LitestreamProgram.Run {
        let name = try await blocking.run { [root] in try Self.writeConfiguration(source, in: root) }
        let run: LitestreamProgram.Run
        do {
            run = try await litestream.run([command, "-config", name + ".yml", "-no-expand-env"] + options + [name + ".sqlite"], within: limit)
        } catch {
            _ = try? await blocking.run { unlink(name + ".yml") }
            throw error
        }
        _ = try? await blocking.run { unlink(name + ".yml") }
        return run
    }

    /// Writes the private configuration naming `source` under `root`'s `tmp/`, named with
    /// `prefix`, after removing those with that prefix left an hour ago or more; returns its
    /// path without `.yml`. The database it names only says which replica is meant: nothing is
    /// ever made at that path. Blocking.
    static func writeConfiguration(_ source: String, in root: DataRoot, prefix: String = configPrefix) throws -> String {
        let folder = root.temporaryDirectory
        try FileSystem.ensureDirectory(folder)
        let now = Date()
        for file in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where file.hasPrefix(prefix) {
            let modified = (try? FileManager.default.attributesOfItem(atPath: folder + "/" + file))?[.modificationDate] as? Date
            if let modified, now.timeIntervalSince(modified) > 3600 { unlink(folder + "/" + file) }
        }
        let name = folder + "/" + prefix + UUID().uuidString
        var text = "dbs:\n  - path: "
        JSONValue.writeString(name + ".sqlite", to: &text)
        text += "\n    replica:\n      url: "
        JSONValue.writeString(source, to: &text)
        text += "\n"
        try FileSystem.atomicWrite(Data(text.utf8), to: name + ".yml")
        return name
    }

    /// What the replica database at `source` holds: Litestream's files at every level
    /// (`litestream ltx -level all -json`); empty when it holds nothing. Bounded by
    /// ``LitestreamProgram/listingTimeout`` or the program's own deadline, whichever is shorter.
    ///
    /// - Throws: `storage` when Litestream cannot read the replica (its words, with any
    ///   password masked by `redact`), does not answer by the deadline, or prints something
    ///   other than its list: an answer that cannot be read is never taken as an empty replica.
    public func files(source: String, redact: (String) -> String, on blocking: some BlockingRunner) async throws -> [File] {
        let run = try await run("ltx", ["-level", "all", "-json"], source: source, within: LitestreamProgram.listingTimeout, on: blocking)
        guard run.status == 0 else {
            throw AccountdError(
                .storage,
                "litestream could not list the replica \(redact(source)) (exit status \(run.status)): \(redact(run.errors.trimmingCharacters(in: .whitespacesAndNewlines)))",
                file: redact(source))
        }
        guard let list = (try? JSONParser.parse(run.output))?.arrayValue else {
            throw AccountdError(
                .storage,
                "litestream listed the replica \(redact(source)) with an answer accountd cannot read (not a JSON list): \(redact(String(run.output.prefix(200))))",
                file: redact(source))
        }
        return list.compactMap(File.init)
    }

    /// One of Litestream's files in a replica (an LTX file at some compaction level).
    public struct File: Sendable, Equatable {
        public var level: Int
        public var minTXID: String
        public var maxTXID: String
        /// When the newest transaction in it was taken from the WAL, as Litestream records it.
        public var timestamp: Date

        init?(_ value: JSONValue) {
            guard let minTXID = value["min_txid"]?.stringValue, let maxTXID = value["max_txid"]?.stringValue,
                let text = value["timestamp"]?.stringValue, let timestamp = LitestreamTime.parse(text)
            else { return nil }
            self.level = Int(value["level"]?.intValue ?? 0)
            self.minTXID = minTXID
            self.maxTXID = maxTXID
            self.timestamp = timestamp
        }
    }
}

/// Litestream's times: RFC 3339, in UTC, with up to nine fractional digits.
public enum LitestreamTime {
    /// `text` as a time; nil when it is not RFC 3339.
    public static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        // Foundation reads at most three fractional digits: cut the rest.
        var trimmed = text
        if let dot = text.firstIndex(of: "."), let end = text[dot...].firstIndex(where: { $0 == "Z" || $0 == "+" || $0 == "-" }) {
            let digits = text[text.index(after: dot)..<end]
            trimmed = String(text[..<dot]) + "." + digits.prefix(3) + String(text[end...])
        }
        return formatter.date(from: trimmed) ?? ISO8601DateFormatter().date(from: text)
    }

    /// `date` in RFC 3339, UTC, with milliseconds: what Litestream's `-timestamp` takes.
    /// Rounded to the nearest millisecond first, so that 09.074 held as 09.07399999 stays 09.074.
    public static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (seconds, fraction) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        let whole = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(fraction < 0 ? seconds - 1 : seconds)))
        let digits = String(fraction < 0 ? fraction + 1000 : fraction)
        return whole.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
