import GRDBSQLite

/// SQL literals for the `sql` export, exact for every SQLite type.
struct SQLLiteral {
    /// Checks how SQLite reads a real's text (``RealLiteral``).
    private var reals: RealLiteral

    /// Literals checked against the SQLite of `connection`.
    init(_ connection: OpaquePointer) throws {
        reals = try RealLiteral(connection)
    }

    /// Releases what the literals hold. Call it once, when the export ends.
    func finalize() {
        reals.finalize()
    }

    /// Appends column `column` of the current row of `statement` as a literal that reads
    /// back as the same value of the same storage class.
    mutating func append(_ statement: OpaquePointer, column: Int32, to out: inout String) {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            out += String(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            reals.append(sqlite3_column_double(statement, column), to: &out)
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(statement, column))
            let bytes = sqlite3_column_text(statement, column).map { UnsafeBufferPointer(start: $0, count: count) }
                ?? UnsafeBufferPointer(start: nil, count: 0)
            // The sqlite3 shell reads a dump line by line: a NUL, a carriage return or invalid
            // UTF-8 would not survive a plain literal, so such text goes out as exact bytes.
            if let text = String(validating: bytes, as: UTF8.self), !bytes.contains(0), !bytes.contains(0x0D) {
                out += text.quotedSQLString
            } else {
                out += "CAST(X'"
                appendHex(UnsafeRawBufferPointer(bytes), to: &out)
                out += "' AS TEXT)"
            }
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, column))
            out += "X'"
            if let blob = sqlite3_column_blob(statement, column), count > 0 {
                appendHex(UnsafeRawBufferPointer(start: blob, count: count), to: &out)
            }
            out += "'"
        default:
            out += "NULL"
        }
    }

    private func appendHex(_ bytes: UnsafeRawBufferPointer, to out: inout String) {
        out.reserveCapacity(out.utf8.count + bytes.count * 2 + 1)
        for byte in bytes {
            out.unicodeScalars.append(hexDigit(byte >> 4))
            out.unicodeScalars.append(hexDigit(byte & 0xF))
        }
    }

    private func hexDigit(_ value: UInt8) -> Unicode.Scalar {
        Unicode.Scalar(value < 10 ? 0x30 + value : 0x61 + value - 10)
    }
}

extension String {
    /// The string as a SQL string literal: `'it''s'`.
    var quotedSQLString: String {
        "'" + replacingOccurrences(of: "'", with: "''") + "'"
    }
}
