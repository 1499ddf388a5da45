import AccountdProtocol
import CSQLiteConfig

extension SQLConnection {
    /// Binds `parameters` to `statement`, after clearing what a previous use bound.
    ///
    /// - Throws: `InvalidParameter` when the values do not match the statement's parameters:
    ///   too few or too many by position, or a name missing or unknown.
    func bind(_ parameters: SQLParameters, to statement: OpaquePointer, sql: String) throws(ProtocolError) {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        let count = Int(sqlite3_bind_parameter_count(statement))
        switch parameters {
        case .positional(let values):
            guard values.count == count else {
                throw Self.mismatch("the statement has \(count) parameter(s) and \(values.count) value(s) were given", sql)
            }
            for (index, value) in values.enumerated() { try bind(value, at: Int32(index + 1), of: statement, sql: sql) }
        case .named(let values):
            var used: Set<String> = []
            for index in 1...max(count, 1) where index <= count {
                guard let raw = sqlite3_bind_parameter_name(statement, Int32(index)) else {
                    throw Self.mismatch("parameter \(index) is positional (?); give the parameters as an array", sql)
                }
                let name = String(cString: raw)
                let key = values[name] != nil ? name : String(name.dropFirst())
                guard let value = values[key] else {
                    throw Self.mismatch("no value was given for parameter \(name)", sql)
                }
                used.insert(key)
                try bind(value, at: Int32(index), of: statement, sql: sql)
            }
            let unknown = values.keys.filter { !used.contains($0) }.sorted()
            guard unknown.isEmpty else {
                throw Self.mismatch("the value(s) named \(unknown.joined(separator: ", ")) match no parameter of the statement", sql)
            }
        }
    }

    private func bind(_ value: SQLValue, at index: Int32, of statement: OpaquePointer, sql: String) throws(ProtocolError) {
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(statement, index)
        case .integer(let i): code = sqlite3_bind_int64(statement, index, i)
        case .real(let d): code = sqlite3_bind_double(statement, index, d)
        case .text(var text):
            // The length in bytes, so that a NUL inside the text is kept; "" is text, not NULL.
            code =
                text.isEmpty
                ? sqlite3_bind_text(statement, index, "", 0, accountd_sqlite3_transient())
                : text.withUTF8 { bytes in
                    bytes.withMemoryRebound(to: CChar.self) {
                        sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), accountd_sqlite3_transient())
                    }
                }
        case .textBytes(let bytes):
            code =
                bytes.isEmpty
                ? sqlite3_bind_text(statement, index, "", 0, accountd_sqlite3_transient())
                : bytes.withUnsafeBytes {
                    sqlite3_bind_text(statement, index, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32($0.count), accountd_sqlite3_transient())
                }
        case .blob(let bytes):
            code =
                bytes.isEmpty
                ? sqlite3_bind_zeroblob(statement, index, 0)
                : bytes.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), accountd_sqlite3_transient()) }
        }
        guard code == SQLITE_OK else { throw failure(code, statement: sql) }
    }

    /// The value of column `index` of the current row.
    func value(_ statement: OpaquePointer, _ index: Int32) -> SQLValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, index))
            let bytes = UnsafeBufferPointer(start: text, count: count)
            // Text SQLite stores need not be UTF-8; such bytes come back as they are.
            guard let valid = String(validating: bytes, as: UTF8.self) else { return .textBytes(Array(bytes)) }
            return .text(valid)
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let bytes = sqlite3_column_blob(statement, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }

    private static func mismatch(_ message: String, _ sql: String) -> ProtocolError {
        ProtocolError(.invalidParameter, "\(message): \(quoted(sql).prefix(200))", facts: [("parameter", "parameters")])
    }
}
