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

/// Receives exported data, on the thread of the pool job that makes it. A sink never
/// blocks: one that holds enough says so (``wantsPause``), and the export stops at the next
/// row or statement, to be resumed by a later job (``ExportRun``).
public protocol ExportSink {
    /// Whether the export should stop after what it is writing and hand over what the sink
    /// holds; false by default (the export then runs to its end in one call).
    var wantsPause: Bool { get }
    /// jsonl: one row, as the JSON object text `{"table":...,"row":{...}}` in UTF-8.
    mutating func row(_ json: UnsafeBufferPointer<UInt8>) throws
    /// sql: a piece of SQL text, about 64 KiB, ending after a whole statement unless one
    /// statement is longer than that (``SQLStatements``).
    mutating func sql(_ text: String) throws
    /// sqlite: a chunk of the file's bytes.
    mutating func bytes(_ chunk: UnsafeRawBufferPointer) throws
}

extension ExportSink {
    public var wantsPause: Bool { false }
}
