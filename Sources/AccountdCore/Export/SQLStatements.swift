/// The `sql` export's text, handed to an ``ExportSink`` in pieces of about 64 KiB, so the
/// export streams without holding the whole dump.
///
/// A piece ends after a whole statement, except inside a statement longer than a piece
/// (a row with a large blob or text), which is cut where its literal is written, so that
/// the daemon never holds more than a piece or so of any statement; the pieces,
/// concatenated, are the dump.
struct SQLStatements {
    /// About how much text a piece holds before it goes to the sink.
    static let pieceBytes = 1 << 16

    private(set) var text: String
    /// Statements added so far (the opening `PRAGMA foreign_keys` and `BEGIN` not counted).
    private(set) var count = 0

    init(text: String) { self.text = text }

    /// Adds a whole statement, without its `;`.
    mutating func add(_ sql: String, to sink: inout some ExportSink) throws {
        append(sql)
        try endStatement("", to: &sink)
    }

    /// Adds text to the statement being written.
    mutating func append(_ piece: String) {
        text += piece
    }

    /// Hands the text over when a piece is full, even in the middle of a statement.
    mutating func flushIfFull(to sink: inout some ExportSink) throws {
        if text.utf8.count >= Self.pieceBytes { try flush(to: &sink) }
    }

    /// Ends the statement being written with `tail` and `;`.
    mutating func endStatement(_ tail: String, to sink: inout some ExportSink) throws {
        text += tail
        text += ";\n"
        count += 1
        try flushIfFull(to: &sink)
    }

    /// Hands over what is left.
    mutating func flush(to sink: inout some ExportSink) throws {
        guard !text.isEmpty else { return }
        try sink.sql(text)
        text = ""
    }
}
