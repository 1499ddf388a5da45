import AccountdProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What ``AccountdClient/export(account:format:)`` yields: data, then the totals.
public enum ExportEvent: Sendable {
    /// `jsonl` rows, in order, as the JSON text the daemon sent: the consecutive rows
    /// that arrived together (one read of the socket), never none. An export has one row
    /// per stored row, so they come in batches rather than one element each.
    case rows([ExportRowLine])
    /// A piece of an `sql` dump or of an `sqlite` file.
    case chunk(ExportChunk)
    /// What was sent, to check the export against; always the last element.
    case finished(ExportTotals)
}

/// One `jsonl` export row as JSON text, `{"table":...,"row":{...}}`, kept undecoded.
///
/// An export can have millions of rows; most programs write them on as they are, so
/// the client does not build a JSON tree for each. ``decoded()`` does when one is wanted.
public struct ExportRowLine: Sendable {
    /// The row reply's parameters as UTF-8 JSON text, without a newline.
    public let json: ArraySlice<UInt8>

    /// The row as a typed model.
    ///
    /// - Throws: ``AccountdClientError/unexpectedReply(_:)`` when the text is not a row.
    public func decoded() throws -> ExportRow {
        let value: JSONValue
        do {
            value = try JSONParser.parse(json)
        } catch {
            throw AccountdClientError.unexpectedReply(ReplyDecodingError(model: "Export row", key: "parameters", expected: "a JSON object", found: nil))
        }
        do {
            return try ExportRow(parameters: value)
        } catch {
            throw AccountdClientError.unexpectedReply(error)
        }
    }
}

/// Recognises the bulk export replies by their bytes, so that they need no full JSON parse.
///
/// The daemon writes a row reply as `{"parameters":{"table":...},"continues":true}`, a
/// file chunk as `{"parameters":{"data":"BASE64"},"continues":true}` and an SQL chunk as
/// `{"parameters":{"sql":"..."},"continues":true}` (only the string is parsed); any other
/// line takes the ordinary path through `Reply.decode`.
enum ExportLines {
    private static let parametersPrefix = Array("{\"parameters\":".utf8)
    private static let rowPrefix = Array(("{\"parameters\":" + ExportRow.parametersPrefix).utf8)
    private static let dataPrefix = Array(("{\"parameters\":" + ExportChunk.dataPrefix).utf8)
    private static let sqlPrefix = Array(("{\"parameters\":" + ExportChunk.sqlPrefix).utf8)
    private static let sqlSuffix = Array("}".utf8) + continuesSuffix
    private static let continuesSuffix = Array(",\"continues\":true}".utf8)
    private static let dataSuffix = Array("\"}".utf8) + continuesSuffix

    /// Parses the export reply lines at the start of `lines`: all the row replies there
    /// are, as one ``ExportEvent/rows(_:)``, or else one other reply.
    static func parse(_ lines: inout ArraySlice<ArraySlice<UInt8>>, _ client: AccountdClient) throws(AccountdClientError) -> (element: ExportEvent?, last: Bool) {
        var rows: [ExportRowLine] = []
        while let line = lines.first, let row = row(line) {
            rows.append(row)
            lines.removeFirst()
        }
        if !rows.isEmpty { return (.rows(rows), false) }
        return try parse(lines.removeFirst(), client)
    }

    /// The row in `line`, when it is a row reply as the daemon writes it.
    private static func row(_ line: ArraySlice<UInt8>) -> ExportRowLine? {
        guard line.count > rowPrefix.count + continuesSuffix.count, line.starts(with: rowPrefix), line.hasSuffix(continuesSuffix) else {
            return nil
        }
        return ExportRowLine(json: line.dropFirst(parametersPrefix.count).dropLast(continuesSuffix.count))
    }

    private static func parse(_ line: ArraySlice<UInt8>, _ client: AccountdClient) throws(AccountdClientError) -> (element: ExportEvent?, last: Bool) {
        if line.count >= dataPrefix.count + dataSuffix.count, line.starts(with: dataPrefix), line.hasSuffix(dataSuffix),
            let bytes = Base64.decode(line.dropFirst(dataPrefix.count).dropLast(dataSuffix.count))
        {
            return (.chunk(.data(bytes)), false)
        }
        if line.count > sqlPrefix.count + sqlSuffix.count, line.starts(with: sqlPrefix), line.hasSuffix(sqlSuffix),
            case .string(let text)? = try? JSONParser.parse(line.dropFirst(sqlPrefix.count).dropLast(sqlSuffix.count))
        {
            return (.chunk(.sql(text)), false)
        }
        let reply = try client.reply(line)
        do {
            guard reply.continues else { return (.finished(try ExportTotals(parameters: reply.parameters)), true) }
            if ExportRow.isRow(reply.parameters) {
                return (.rows([ExportRowLine(json: Array(reply.parameters.serialized().utf8)[...])]), false)
            }
            return (.chunk(try ExportChunk(parameters: reply.parameters)), false)
        } catch {
            throw AccountdClientError.unexpectedReply(error)
        }
    }
}

extension ArraySlice where Element == UInt8 {
    // Byte comparisons with memcmp: these run for every line of an export. Offsets count
    // from the slice's start, whatever its indices are.

    fileprivate func starts(with prefix: [UInt8]) -> Bool {
        count >= prefix.count && matches(prefix, at: 0)
    }

    fileprivate func hasSuffix(_ suffix: [UInt8]) -> Bool {
        count >= suffix.count && matches(suffix, at: count - suffix.count)
    }

    private func matches(_ other: [UInt8], at offset: Int) -> Bool {
        withUnsafeBufferPointer { mine in
            other.withUnsafeBufferPointer { theirs in
                memcmp(mine.baseAddress! + offset, theirs.baseAddress!, theirs.count) == 0
            }
        }
    }
}
