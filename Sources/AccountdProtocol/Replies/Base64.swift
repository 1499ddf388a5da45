/// Standard base64 (RFC 4648, with padding), for the data chunks of an `sqlite` export.
///
/// The protocol module has no Foundation, and a client decodes every chunk of a large
/// export, so this works on bytes directly.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Encodes `bytes` as base64 text with padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        bytes.withUnsafeBytes { append($0, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the base64 text of `data` to `out`: how the daemon writes export chunks
    /// and blobs without building strings.
    public static func append(_ data: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var index = 0
        let count = data.count
        out.reserveCapacity(out.count + (count + 2) / 3 * 4)
        while index + 3 <= count {
            let n = UInt32(data[index]) << 16 | UInt32(data[index + 1]) << 8 | UInt32(data[index + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            index += 3
        }
        let rest = count - index
        if rest == 1 {
            let n = UInt32(data[index]) << 16
            out.append(contentsOf: [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], 0x3D, 0x3D])
        } else if rest == 2 {
            let n = UInt32(data[index]) << 16 | UInt32(data[index + 1]) << 8
            out.append(contentsOf: [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], 0x3D])
        }
    }

    /// Decodes base64 text, or returns nil when it is not base64 with padding.
    public static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var padding = 0
        if text.last == UInt8(ascii: "=") { padding += 1 }
        if text.count >= 2, text[text.endIndex - 2] == UInt8(ascii: "=") { padding += 1 }
        var out = [UInt8]()
        out.reserveCapacity(text.count / 4 * 3)
        return values.withUnsafeBufferPointer { table -> [UInt8]? in
            var index = text.startIndex
            let end = text.endIndex
            while index < end {
                let last = index + 4 == end
                var value: UInt32 = 0
                for offset in 0..<4 {
                    let byte = text[index + offset]
                    if last && offset >= 4 - padding {
                        guard byte == UInt8(ascii: "=") else { return nil }
                        value <<= 6
                        continue
                    }
                    let digit = table[Int(byte)]
                    guard digit != 0xFF else { return nil }
                    value = value << 6 | UInt32(digit)
                }
                out.append(UInt8(value >> 16 & 0xFF))
                if !last || padding < 2 { out.append(UInt8(value >> 8 & 0xFF)) }
                if !last || padding < 1 { out.append(UInt8(value & 0xFF)) }
                index += 4
            }
            return out
        }
    }
}
