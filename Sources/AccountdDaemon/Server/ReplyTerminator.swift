import AccountdProtocol
import NIOCore

/// Ends every reply on the varlink socket with NUL instead of `\n`.
///
/// Every reply reaches the socket through the connection's one ``ConnectionWriter`` (what
/// is answered at once, a task's replies, an export's chunks, Watch events), encoded as a line. A reply's JSON never holds a raw `\n` (JSON escapes
/// control characters in strings, and the encoder writes no whitespace), so each `\n` in
/// the outgoing bytes is a reply's end, and turning it into NUL gives varlink's framing
/// in one place, whatever made the reply. Sits ahead of ``Connection`` in the pipeline
/// of the varlink socket only; the line socket's pipeline does not have it.
final class ReplyTerminator: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var buffer = unwrapOutboundIn(data)
        buffer.withUnsafeMutableReadableBytes { bytes in
            for index in bytes.indices where bytes[index] == Framing.line.terminator {
                bytes[index] = Framing.varlink.terminator
            }
        }
        context.write(wrapOutboundOut(buffer), promise: promise)
    }
}
