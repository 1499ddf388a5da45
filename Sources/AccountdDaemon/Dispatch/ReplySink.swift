import AccountdCore
import AccountdProtocol

/// Wraps exported data in streamed replies, gathered into a piece of about 256 KiB: one pool
/// job makes one piece (``ExportRun``), which is one write for the daemon and, with
/// ``AccountdClient``'s read size, one hand-over from the client's event loop to its caller.
struct ReplySink: ExportSink {
    /// The piece made so far.
    private(set) var buffer: [UInt8] = []
    private static let threshold = 256 * 1024
    private static let rowPrefix = Array("{\"parameters\":".utf8)
    private static let sqlPrefix = Array(("{\"parameters\":" + ExportChunk.sqlPrefix).utf8)
    private static let dataPrefix = Array(("{\"parameters\":" + ExportChunk.dataPrefix).utf8)
    private static let suffix = Array(",\"continues\":true}\n".utf8)

    init() {
        buffer.reserveCapacity(Self.threshold + 4096)
    }

    /// Whether the piece is full: the export stops there until the next job.
    var wantsPause: Bool { buffer.count >= Self.threshold }

    mutating func row(_ json: UnsafeBufferPointer<UInt8>) throws {
        buffer.append(contentsOf: Self.rowPrefix)
        buffer.append(contentsOf: json)
        buffer.append(contentsOf: Self.suffix)
    }

    mutating func sql(_ text: String) throws {
        buffer.append(contentsOf: Self.sqlPrefix)
        JSONValue.writeString(text, to: &buffer)
        buffer.append(UInt8(ascii: "}"))
        buffer.append(contentsOf: Self.suffix)
    }

    mutating func bytes(_ chunk: UnsafeRawBufferPointer) throws {
        buffer.append(contentsOf: Self.dataPrefix)
        Base64.append(chunk, to: &buffer)
        buffer.append(contentsOf: "\"}".utf8)
        buffer.append(contentsOf: Self.suffix)
    }
}
