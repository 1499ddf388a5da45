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

    /// Appends column `column` of the current row of `statement` to `out` as a literal that
    /// reads back as the same value of the same storage class. A large blob or text goes
    /// out in pieces as it is written (``SQLStatements/flushIfFull(to:)``), and stops once
    /// `sink` wants a pause, to go on from where it stopped in a later call on the same row.
    ///
    /// - Parameter offset: 0 for a new literal, else where the last call stopped in its bytes.
    /// - Returns: nil once the literal is whole; else the offset to go on from.
    mutating func append(
        _ statement: OpaquePointer, column: Int32, from offset: Int = 0, to out: inout SQLStatements, sink: inout some ExportSink
    ) throws -> Int? {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            out.append(String(sqlite3_column_int64(statement, column)))
        case SQLITE_FLOAT:
            var text = ""
            reals.append(sqlite3_column_double(statement, column), to: &text)
            out.append(text)
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(statement, column))
            let bytes = sqlite3_column_text(statement, column).map { UnsafeBufferPointer(start: $0, count: count) }
                ?? UnsafeBufferPointer(start: nil, count: 0)
            // The sqlite3 shell reads a dump line by line: a NUL, a carriage return or invalid
            // UTF-8 would not survive a plain literal, so such text goes out as exact bytes.
            if offset == 0, count < SQLStatements.pieceBytes, let text = String(validating: bytes, as: UTF8.self), !bytes.contains(0),
                !bytes.contains(0x0D)
            {
                out.append(text.quotedSQLString)
            } else {
                // Long text goes out as its bytes too, so that it can be cut into pieces.
                if offset == 0 { out.append("CAST(X'") }
                if let paused = try appendHex(UnsafeRawBufferPointer(bytes), from: offset, to: &out, sink: &sink) { return paused }
                out.append("' AS TEXT)")
            }
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, column))
            if offset == 0 { out.append("X'") }
            if let blob = sqlite3_column_blob(statement, column), count > 0,
                let paused = try appendHex(UnsafeRawBufferPointer(start: blob, count: count), from: offset, to: &out, sink: &sink)
            {
                return paused
            }
            out.append("'")
        default:
            out.append("NULL")
        }
        return nil
    }

    /// Appends `bytes` from `offset` on as hex digits, a piece at a time; returns where it
    /// stopped when `sink` wants a pause before the end, nil at the end.
    private func appendHex(_ bytes: UnsafeRawBufferPointer, from offset: Int, to out: inout SQLStatements, sink: inout some ExportSink) throws -> Int? {
        let chunk = SQLStatements.pieceBytes / 2
        var start = offset
        while start < bytes.count {
            let end = min(start + chunk, bytes.count)
            var hex = ""
            hex.reserveCapacity((end - start) * 2)
            for byte in bytes[start..<end] {
                hex.unicodeScalars.append(hexDigit(byte >> 4))
                hex.unicodeScalars.append(hexDigit(byte & 0xF))
            }
            out.append(hex)
            try out.flushIfFull(to: &sink)
            start = end
            if start < bytes.count && sink.wantsPause { return start }
        }
        return nil
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
