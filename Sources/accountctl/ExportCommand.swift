import AccountdProtocol
import ArgumentParser
import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `accountctl export ACCOUNT [--format jsonl|sql|sqlite] [-o FILE]`: copy an account out.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export an account as JSON lines, SQL or an SQLite file.",
        discussion: """
            jsonl: one {"table":...,"row":{...}} object per line. sql: statements that \
            rebuild the account with `sqlite3 new.db < dump.sql`. sqlite: a consistent copy \
            of the file, checked against the sha256 the daemon sends. All formats come from \
            one consistent read. With -o FILE the export is written beside FILE and renamed \
            into place only when complete, so a failed export leaves no partial file. \
            A summary goes to stderr. With --json, every reply is printed instead of the \
            data; with --json and -o FILE, the data goes to FILE and only the final summary \
            reply is printed. Needs an admin peer.
            """)

    /// The export formats the daemon offers.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case jsonl, sql, sqlite
    }

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to export.")
    var account: String

    @Option(help: "The export format.")
    var format: Format = .jsonl

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp("Write to FILE instead of stdout.", valueName: "file"),
        completion: .file())
    var output: String?

    func validate() throws {
        try validateAccountName(account)
        let toStdout = output == nil || output == "-"
        if format == .sqlite && toStdout && !global.json && isatty(1) == 1 {
            throw ValidationError("refusing to write an SQLite file to the terminal; use -o FILE or redirect stdout")
        }
        if let output, output.isEmpty || output.hasSuffix("/") {
            throw ValidationError("-o needs a file name, not \(output.isEmpty ? "an empty one" : "a directory")")
        }
        var info = stat()
        if let output, !toStdout, stat(output, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw ValidationError("\(output) is a directory; give a file name to export into")
        }
    }

    func run() throws {
        let connection = try global.connect()
        // With --json and no -o, stdout carries the replies, not the data.
        let printsEveryReply = global.json && (output == nil || output == "-")
        let sink = printsEveryReply ? nil : try ExportSink(path: output)
        var received = Received()
        var progress = Progress("exporting \(account)", shown: !global.json)
        let summary: JSONValue
        do {
            let parameters: [(String, JSONValue)] = [("account", .string(account)), ("format", .string(format.rawValue))]
            let each: (JSONValue) throws -> Void = { reply in
                if printsEveryReply { Output.json(reply) }
                try received.take(reply, format: format, into: sink)
                progress.update(status: received.progressText(format))
            }
            if format == .jsonl && !printsEveryReply {
                // A row reply is {"parameters":<row>,"continues":true}: write <row> as it is.
                summary = try connection.streamLines(.export, parameters, raw: { line in
                    guard let row = Received.rowBytes(line) else { return false }
                    try sink?.append(row)
                    try sink?.append(CollectionOfOne(UInt8(ascii: "\n")))
                    received.rows += 1
                    if received.rows % 4096 == 0 { progress.update(status: received.progressText(format)) }
                    return true
                }, each: each)
            } else {
                summary = try connection.stream(.export, parameters, each: each)
            }
            progress.clear()
            do {
                try received.check(against: summary, format: format)
            } catch let error as ClientError {
                let note = sink?.path.map { "; \($0) was not written" } ?? "; do not trust what was printed"
                throw ClientError.failed(error.message + note)
            }
            try sink?.commit()
        } catch {
            progress.clear()
            sink?.discard()
            throw error
        }
        if global.json { return Output.json(summary) }
        let destination = sink?.destination ?? "stdout"
        Terminal.printError(
            "exported \(account) as \(format.rawValue) to \(destination): \(received.summaryText(format, summary))")
    }
}

/// What an export has received so far, and its checks against the final reply.
private struct Received {
    var rows: Int64 = 0
    var chunks: Int64 = 0
    var bytes: Int64 = 0
    var hasher = SHA256()

    private static let rowPrefix = Array(#"{"parameters":{"table":"#.utf8)
    private static let rowSuffix = Array(#","continues":true}"#.utf8)

    /// The row object inside a jsonl row reply line, or nil when the line is something else.
    static func rowBytes(_ line: [UInt8]) -> ArraySlice<UInt8>? {
        guard line.count > rowPrefix.count + rowSuffix.count, line.starts(with: rowPrefix),
            line[(line.count - rowSuffix.count)...].elementsEqual(rowSuffix)
        else { return nil }
        return line[14..<(line.count - rowSuffix.count)]
    }

    /// Takes one streamed reply: checks its shape and writes its data to `sink`.
    mutating func take(_ reply: JSONValue, format: ExportCommand.Format, into sink: ExportSink?) throws {
        switch format {
        case .jsonl:
            guard reply["table"] != nil, reply["row"] != nil else { throw Self.unexpected(reply, "table and row") }
            try sink?.append(reply.serialized() + "\n")
            rows += 1
        case .sql:
            guard let text = reply["sql"]?.stringValue else { throw Self.unexpected(reply, "sql") }
            try sink?.append(text)
            chunks += 1
            bytes += Int64(text.utf8.count)
        case .sqlite:
            guard let text = reply["data"]?.stringValue else { throw Self.unexpected(reply, "data") }
            guard let data = Data(base64Encoded: text) else {
                throw ClientError.failed("the export's data chunk \(chunks + 1) is not valid base64")
            }
            hasher.update(data: data)
            try sink?.append(data)
            chunks += 1
            bytes += Int64(data.count)
        }
    }

    /// Compares what arrived with the final reply's counts and digest.
    ///
    /// - Throws: ``ClientError`` (exit 1) on any mismatch.
    func check(against summary: JSONValue, format: ExportCommand.Format) throws {
        switch format {
        case .jsonl:
            if let expected = summary["rows"]?.intValue, expected != rows {
                throw ClientError.failed("the export is incomplete: \(rows) rows arrived, the daemon says it sent \(expected)")
            }
        case .sql:
            break
        case .sqlite:
            let digest = hasher.finalize().map { byte in
                let hex = String(byte, radix: 16)
                return byte < 16 ? "0" + hex : hex
            }.joined()
            guard let expected = summary["sha256"]?.stringValue?.lowercased() else {
                throw ClientError.failed("the export's final reply carries no sha256, so the file cannot be checked")
            }
            if let size = summary["sizeBytes"]?.intValue, size != bytes {
                throw ClientError.failed("the export is \(bytes) bytes, but the daemon says the file is \(size) bytes")
            }
            if digest != expected {
                throw ClientError.failed("the export's sha256 is \(digest), but the daemon sent \(expected)")
            }
        }
    }

    func progressText(_ format: ExportCommand.Format) -> String {
        format == .jsonl ? "\(Output.count(rows)) rows" : "\(Output.size(bytes)) received"
    }

    func summaryText(_ format: ExportCommand.Format, _ summary: JSONValue) -> String {
        switch format {
        case .jsonl:
            let tables = summary["tables"]?.objectValue?.count
            return "\(Output.count(rows)) rows" + (tables.map { " from \($0) table\($0 == 1 ? "" : "s")" } ?? "")
        case .sql:
            return "\(Output.text(summary["statements"])) statements, \(Output.size(bytes))"
        case .sqlite:
            return "\(Output.size(bytes)), sha256 \(Output.text(summary["sha256"])) verified"
        }
    }

    private static func unexpected(_ reply: JSONValue, _ keys: String) -> ClientError {
        ClientError.failed("unexpected export reply (expected \(keys)): \(String(reply.serialized().prefix(200)))")
    }
}
