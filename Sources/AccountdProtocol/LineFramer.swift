#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Splits a byte stream into lines, with a cap on line length.
///
/// A line ends at its delimiter, `\n` unless told otherwise; with `\n`, a `\r` right
/// before it is dropped, so `\r\n` works too. varlink's messages end in a NUL byte
/// instead (see ``Framing``).
/// Bytes can arrive in any pieces: a line split across reads is joined, and
/// several lines in one read are split. A line (or an unfinished one) longer than
/// ``maximumLineLength`` bytes is refused as soon as that is known, without
/// buffering the rest of it.
public struct LineFramer: Sendable {
    /// A line longer than the limit.
    public struct LineTooLong: Error, Hashable, Sendable {
        public var limit: Int
    }

    /// The longest line accepted, in bytes, not counting its line ending.
    public let maximumLineLength: Int
    /// The byte that ends a line.
    public let delimiter: UInt8
    private var buffer: [UInt8] = []
    private var consumed = 0
    private var scanned = 0

    /// A framer for lines of at most `maximumLineLength` bytes, each ended by `delimiter`.
    public init(maximumLineLength: Int, delimiter: UInt8 = 0x0A) {
        precondition(maximumLineLength > 0, "maximumLineLength must be positive")
        self.maximumLineLength = maximumLineLength
        self.delimiter = delimiter
    }

    /// Adds bytes that arrived, in any collection; see ``append(_:)-(UnsafeRawBufferPointer)``.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        guard bytes.withContiguousStorageIfAvailable({ append(UnsafeRawBufferPointer($0)) }) != nil else {
            return append(Array(bytes))
        }
    }

    /// Adds bytes that arrived, from memory: one copy, and no generic code to go through
    /// (this runs for every read of every connection).
    ///
    /// Once a line was taken since the last read, the buffer starts over: the lines handed
    /// out keep the old one, untouched, for as long as their reader holds them, and nothing
    /// is copied twice. When every byte was taken (the usual case), the buffer is emptied
    /// keeping its capacity: its memory is reused as it is when no line holds it any more
    /// (the daemon copies each request line out), and a buffer of the same capacity is made
    /// when lines still do (the client library's queued replies). Else the bytes not yet
    /// returned (an unfinished line) and the new ones go into a new buffer, sized for both.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        let incoming = bytes.bindMemory(to: UInt8.self)
        guard consumed > 0 else { return buffer.append(contentsOf: incoming) }
        if consumed == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            buffer.append(contentsOf: incoming)
            scanned = 0
            consumed = 0
            return
        }
        var next: [UInt8] = []
        next.reserveCapacity(buffer.count - consumed + incoming.count)
        next.append(contentsOf: buffer[consumed...])
        next.append(contentsOf: incoming)
        buffer = next
        scanned -= consumed
        consumed = 0
    }

    /// The next complete line, without its line ending, or nil when no full line is buffered.
    ///
    /// The line shares the framer's buffer, so the lines of one read cost no copy; the
    /// buffer stays theirs while they are held (see ``append(_:)-(UnsafeRawBufferPointer)``).
    ///
    /// - Throws: ``LineTooLong`` when the next line exceeds the limit; the framer is then
    ///   unusable, as the stream has lost its framing.
    public mutating func nextLine() throws(LineTooLong) -> ArraySlice<UInt8>? {
        if let found = indexOfDelimiter() {
            var end = found
            if delimiter == 0x0A && end > consumed && buffer[end - 1] == 0x0D { end -= 1 }
            let line = buffer[consumed..<end]
            scanned = found + 1
            consumed = scanned
            guard line.count <= maximumLineLength else { throw LineTooLong(limit: maximumLineLength) }
            return line
        }
        scanned = buffer.count
        // No newline yet: refuse an unfinished line that is already too long. A final \r may
        // still turn out to be half of a \r\n, so it does not count yet.
        let pending = buffer.count - consumed
        let endsWithReturn = delimiter == 0x0A && pending > 0 && buffer[buffer.count - 1] == 0x0D
        if pending - (endsWithReturn ? 1 : 0) > maximumLineLength { throw LineTooLong(limit: maximumLineLength) }
        return nil
    }

    /// Where the next delimiter is, searching from ``scanned``: `memchr` over the buffer,
    /// as this runs over every byte of every reply and request.
    private func indexOfDelimiter() -> Int? {
        guard scanned < buffer.count else { return nil }
        return buffer.withUnsafeBufferPointer { bytes in
            let start = bytes.baseAddress! + scanned
            guard let hit = memchr(start, Int32(delimiter), bytes.count - scanned) else { return nil }
            return UnsafeRawPointer(hit) - UnsafeRawPointer(bytes.baseAddress!)
        }
    }

    /// What is left after the last complete line: the unterminated tail at end of input.
    public var remainder: [UInt8] { Array(buffer[consumed...]) }

    /// The number of bytes buffered and not yet returned.
    public var bufferedCount: Int { buffer.count - consumed }
}
