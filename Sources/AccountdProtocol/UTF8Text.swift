extension String {
    /// `bytes` as text, or nil when they are not valid UTF-8.
    init?(validatingUTF8Bytes bytes: [UInt8]) {
        guard Self.isValidUTF8(bytes) else { return nil }
        // Valid UTF-8 decodes exactly: nothing is replaced.
        self = String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `bytes` are valid UTF-8.
    ///
    /// Requests and replies are nearly always ASCII: those are checked a byte at a time
    /// over the buffer, which costs far less than the standard library's general
    /// validation, and only text with other bytes goes through it; no `String` is made.
    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer(isValidUTF8)
    }

    /// Whether `bytes`, a part of a buffer, are valid UTF-8.
    static func isValidUTF8(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBufferPointer(isValidUTF8)
    }

    private static func isValidUTF8(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        buffer.allSatisfy { $0 < 0x80 } || String(validating: buffer, as: UTF8.self) != nil
    }
}
