extension String {
    /// `bytes` as text, or nil when they are not valid UTF-8.
    ///
    /// Requests and replies are nearly always ASCII: those are checked a byte at a time
    /// over the buffer, which costs far less than the standard library's general
    /// validation, and only text with other bytes goes through it.
    init?(validatingUTF8Bytes bytes: [UInt8]) {
        let text = bytes.withUnsafeBufferPointer { buffer -> String? in
            if buffer.allSatisfy({ $0 < 0x80 }) { return String(decoding: buffer, as: UTF8.self) }
            return String(validating: buffer, as: UTF8.self)
        }
        guard let text else { return nil }
        self = text
    }
}

extension String {
    /// Whether `bytes` are valid UTF-8, without making a `String` of them when they are
    /// ASCII (nearly every request).
    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.allSatisfy { $0 < 0x80 } || String(validating: buffer, as: UTF8.self) != nil
        }
    }
}
