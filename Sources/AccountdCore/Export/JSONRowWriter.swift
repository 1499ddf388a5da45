import AccountdProtocol
import GRDBSQLite

/// Writes the current row of a SQLite statement as JSON, straight from SQLite's
/// column accessors into a byte buffer: integers and reals as JSON numbers (an infinity
/// as `{"$real":"Infinity"}` or `"-Infinity"`), text as a string (text that is not valid UTF-8 as
/// `{"$textBase64":"..."}`, its bytes), NULL as null, and a blob as `{"$base64":"..."}`.
struct JSONRowWriter {
    /// `{"table":"<name>","row":{` for one table.
    private let prefix: [UInt8]
    /// `"<column>":` for each column.
    private let columnKeys: [[UInt8]]

    init(table: String, columns: [String]) {
        var p = ExportRow.parametersPrefix  // the keys of the wire model, ExportRow
        JSONText.appendString(table, to: &p)
        p += ExportRow.rowSeparator + "{"
        prefix = Array(p.utf8)
        columnKeys = columns.enumerated().map { index, name in
            var key = index == 0 ? "" : ","
            JSONText.appendString(name, to: &key)
            key += ":"
            return Array(key.utf8)
        }
    }

    func write(_ statement: OpaquePointer, into out: inout [UInt8]) {
        out.append(contentsOf: prefix)
        for (index, key) in columnKeys.enumerated() {
            out.append(contentsOf: key)
            let column = Int32(index)
            switch sqlite3_column_type(statement, column) {
            case SQLITE_INTEGER:
                JSONText.appendInteger(sqlite3_column_int64(statement, column), to: &out)
            case SQLITE_FLOAT:
                // JSON has no infinity: one goes out as {"$real":"Infinity"} or "-Infinity".
                let value = sqlite3_column_double(statement, column)
                out.append(contentsOf: (value.isFinite ? String(value) : value > 0 ? #"{"$real":"Infinity"}"# : #"{"$real":"-Infinity"}"#).utf8)
            case SQLITE_TEXT:
                let count = Int(sqlite3_column_bytes(statement, column))
                if let text = sqlite3_column_text(statement, column) {
                    let bytes = UnsafeBufferPointer(start: text, count: count)
                    if JSONText.isValidUTF8(bytes) {
                        JSONText.appendString(bytes, to: &out)
                    } else {
                        // A JSON string holds only Unicode: text that is not valid UTF-8 goes out as its bytes.
                        out.append(contentsOf: "{\"$textBase64\":\"".utf8)
                        Base64.append(UnsafeRawBufferPointer(bytes), to: &out)
                        out.append(contentsOf: "\"}".utf8)
                    }
                } else {
                    out.append(contentsOf: "\"\"".utf8)
                }
            case SQLITE_BLOB:
                let count = Int(sqlite3_column_bytes(statement, column))
                out.append(contentsOf: "{\"$base64\":\"".utf8)
                if let blob = sqlite3_column_blob(statement, column), count > 0 {
                    Base64.append(UnsafeRawBufferPointer(start: blob, count: count), to: &out)
                }
                out.append(contentsOf: "\"}".utf8)
            default:
                out.append(contentsOf: "null".utf8)
            }
        }
        out.append(contentsOf: "}}".utf8)
    }
}

/// JSON text helpers that append to byte buffers and strings.
enum JSONText {
    static func appendString(_ s: String, to out: inout String) {
        var bytes: [UInt8] = []
        Array(s.utf8).withUnsafeBufferPointer { appendString($0, to: &bytes) }
        out += String(decoding: bytes, as: UTF8.self)
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Whether `text` is valid UTF-8 (ASCII is, at once).
    static func isValidUTF8(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard text.contains(where: { $0 >= 0x80 }) else { return true }
        return String(validating: text, as: UTF8.self) != nil
    }

    /// Appends a JSON string for UTF-8 `text`. Invalid UTF-8 becomes U+FFFD, so the output is always valid JSON.
    static func appendString(_ text: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(0x22)
        var clean = true
        for byte in text where byte < 0x20 || byte == 0x22 || byte == 0x5C || byte >= 0x80 {
            clean = false
            break
        }
        if clean {
            out.append(contentsOf: text)
            out.append(0x22)
            return
        }
        let decoded = String(decoding: text, as: UTF8.self)
        for scalar in decoded.unicodeScalars {
            switch scalar.value {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, 0x6E])
            case 0x0D: out.append(contentsOf: [0x5C, 0x72])
            case 0x09: out.append(contentsOf: [0x5C, 0x74])
            case 0..<0x20, 0x7F, 0x2028, 0x2029:
                let v = Int(scalar.value)
                out.append(contentsOf: [0x5C, 0x75, hex[(v >> 12) & 0xF], hex[(v >> 8) & 0xF], hex[(v >> 4) & 0xF], hex[v & 0xF]])
            default:
                out.append(contentsOf: String(scalar).utf8)
            }
        }
        out.append(0x22)
    }

    static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value == 0 {
            out.append(0x30)
            return
        }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[19 - count] = UInt8(magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            }
        }
        if value < 0 { out.append(0x2D) }
        withUnsafeBytes(of: &digits) { buffer in out.append(contentsOf: buffer[(20 - count)...]) }
    }
}
