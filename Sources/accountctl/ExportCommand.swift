import AccountdClient
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
struct ExportCommand: AsyncParsableCommand {
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
            reply is printed. Needs an admin peer, or a read grant on the account.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to export.")
    var account: String

    @Option(help: "The export format.")
    var format: ExportFormat = .jsonl

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

    func run() async throws {
        let client = try await global.connect()
        // With --json and no -o, stdout carries the replies, not the data.
        let printsEveryReply = global.json && (output == nil || output == "-")
        let sink = printsEveryReply ? nil : try ExportSink(path: output)
        var received = Received()
        var progress = Progress("exporting \(account)", shown: !global.json)
        var totals: ExportTotals?
        do {
            for try await event in await client.export(account: account, format: format) {
                switch event {
                case .rows(let rows):
                    for row in rows {
                        if printsEveryReply { Output.json(try row.decoded().parameters) }
                        try sink?.append(row.json)
                        try sink?.append(CollectionOfOne(UInt8(ascii: "\n")))
                    }
                    received.rows += Int64(rows.count)
                    progress.update(status: received.progressText(format))
                case .chunk(let chunk):
                    if printsEveryReply { Output.json(chunk.parameters) }
                    try received.take(chunk, format: format, into: sink)
                    progress.update(status: received.progressText(format))
                case .finished(let last):
                    totals = last
                }
            }
            progress.clear()
            guard let totals else { return }
            do {
                try received.check(against: totals, format: format)
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
        guard let totals else { return }
        if global.json { return Output.json(totals.parameters) }
        let destination = sink?.destination ?? "stdout"
        Terminal.printError(
            "exported \(account) as \(format.rawValue) to \(destination): \(received.summaryText(format, totals))")
    }
}

/// What an export has received so far, and its checks against the final reply.
private struct Received {
    var rows: Int64 = 0
    var chunks: Int64 = 0
    var bytes: Int64 = 0
    var hasher = SHA256()

    /// Takes one chunk: checks that it fits the format and writes its data to `sink`.
    mutating func take(_ chunk: ExportChunk, format: ExportFormat, into sink: ExportSink?) throws {
        switch (chunk, format) {
        case (.sql(let text), .sql):
            try sink?.append(text)
            chunks += 1
            bytes += Int64(text.utf8.count)
        case (.data(let data), .sqlite):
            data.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            try sink?.append(data)
            chunks += 1
            bytes += Int64(data.count)
        default:
            throw ClientError.failed(
                "unexpected export reply for format \(format.rawValue): \(String(chunk.parameters.serialized().prefix(200)))")
        }
    }

    /// Compares what arrived with the final reply's counts and digest.
    ///
    /// - Throws: ``ClientError`` (exit 1) on any mismatch.
    func check(against summary: ExportTotals, format: ExportFormat) throws {
        switch format {
        case .jsonl:
            if let expected = summary.rows.map(Int64.init), expected != rows {
                throw ClientError.failed("the export is incomplete: \(rows) rows arrived, the daemon says it sent \(expected)")
            }
        case .sql:
            break
        case .sqlite:
            let digest = hasher.finalize().map { byte in
                let hex = String(byte, radix: 16)
                return byte < 16 ? "0" + hex : hex
            }.joined()
            guard let expected = summary.sha256?.lowercased() else {
                throw ClientError.failed("the export's final reply carries no sha256, so the file cannot be checked")
            }
            if let size = summary.sizeBytes, size != bytes {
                throw ClientError.failed("the export is \(bytes) bytes, but the daemon says the file is \(size) bytes")
            }
            if digest != expected {
                throw ClientError.failed("the export's sha256 is \(digest), but the daemon sent \(expected)")
            }
        }
    }

    func progressText(_ format: ExportFormat) -> String {
        format == .jsonl ? "\(Output.count(rows)) rows" : "\(Output.size(bytes)) received"
    }

    func summaryText(_ format: ExportFormat, _ summary: ExportTotals) -> String {
        switch format {
        case .jsonl:
            let tables = summary.tables?.count
            return "\(Output.count(rows)) rows" + (tables.map { " from \($0) table\($0 == 1 ? "" : "s")" } ?? "")
        case .sql:
            return "\(Output.text(summary.statements)) statements, \(Output.size(bytes))"
        case .sqlite:
            return "\(Output.size(bytes)), sha256 \(summary.sha256 ?? "-") verified"
        }
    }
}

/// `--format`: the formats are the protocol's own, spelt as on the wire.
extension ExportFormat: ExpressibleByArgument {}
