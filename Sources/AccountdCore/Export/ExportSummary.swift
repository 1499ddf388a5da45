import AccountdProtocol

/// What an export produced, sent as its final reply.
public struct ExportSummary: Sendable, Hashable {
    public var format: ExportFormat
    /// jsonl: rows per table.
    public var tables: [String: Int] = [:]
    /// jsonl: rows in all.
    public var rows: Int = 0
    /// sql: statements written.
    public var statements: Int = 0
    /// sqlite: size of the copy in bytes.
    public var sizeBytes: Int64 = 0
    /// sqlite: SHA-256 of the copy, lowercase hex.
    public var sha256: String = ""
}

/// Receives exported data. Called on the exporting thread; blocking in it slows the
/// export down, which is how a slow reader applies backpressure.
public protocol ExportSink {
    /// jsonl: one row, as the JSON object text `{"table":...,"row":{...}}` in UTF-8.
    mutating func row(_ json: UnsafeBufferPointer<UInt8>) throws
    /// sql: a piece of SQL text, about 64 KiB, ending after a whole statement unless one
    /// statement is longer than that (``SQLStatements``).
    mutating func sql(_ text: String) throws
    /// sqlite: a chunk of the file's bytes.
    mutating func bytes(_ chunk: UnsafeRawBufferPointer) throws
}
