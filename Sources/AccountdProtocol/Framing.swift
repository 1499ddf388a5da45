/// How requests and replies are cut and read on one socket.
///
/// The daemon serves two framings of the same requests, through the same dispatcher:
///
/// - ``line``, on `accountd.sock`: one JSON object or one inline request per line,
///   ended by `\n` (`\r\n` accepted), for `accountctl`, `socat` and shell scripts;
/// - ``varlink``, on `io.accountd`: varlink's framing, one JSON object per message,
///   ended by a NUL byte, with `oneway` honoured and `upgrade` refused, and the
///   `org.varlink.service` interface served beside `io.accountd`.
///
/// Replies are the same JSON in both framings; only the byte that ends them differs.
/// A reply never holds a raw `\n` or NUL inside it (JSON escapes every control
/// character in strings and the encoder writes no whitespace), so its last byte is
/// its only terminator.
public enum Framing: String, Sendable, Hashable, CaseIterable {
    /// One request per line, JSON or inline.
    case line
    /// varlink: NUL-terminated JSON messages.
    case varlink

    /// The byte that ends every request and every reply: `\n`, or NUL for varlink.
    public var terminator: UInt8 {
        switch self {
        case .line: 0x0A
        case .varlink: 0x00
        }
    }
}
