import AccountdProtocol
import NIOCore

/// Splits a connection's bytes into request lines, ahead of ``Connection`` in the pipeline.
///
/// A line ends at its framing's terminator (``Framing/terminator``): `\n` on the line
/// socket, NUL on the varlink socket; everything else is the same for both.
///
/// Each line read goes on as a ``ConnectionStateMachine/Frame/request(_:)``, in order, the
/// moment its newline arrives; ``LineFramer`` does the splitting and keeps the length cap.
/// A line over `requests.maxBytes` goes on as ``ConnectionStateMachine/Frame/tooLarge``,
/// after which the stream has no framing left and the rest of the input is dropped (the
/// connection answers `RequestTooLarge` and closes).
///
/// Only the framer knows what is left unframed, so it also says so:
/// - when a read leaves the first bytes of a request without their newline, a
///   ``RequestBegun`` event goes on (once per request), so that a stopping connection
///   answers that request with `ShuttingDown` instead of closing on it;
/// - when the client closes its side, the bytes it sent after its last newline go on as
///   one last request, then the `inputClosed` event.
final class RequestFramer: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ConnectionStateMachine.Frame

    /// Sent on when the client has begun a request: bytes arrived after its last line,
    /// without a newline yet.
    struct RequestBegun {}

    private let maximumRequestBytes: Int
    /// Nil once framing ended: after an oversized line, or at the end of input.
    private var framer: LineFramer?
    /// ``RequestBegun`` went on for the bytes after the last line.
    private var begunReported = false

    /// A framer for lines of at most `maximumRequestBytes` (`requests.maxBytes`), line ending
    /// not counted, each ended as `framing` says.
    init(maximumRequestBytes: Int, framing: Framing = .line) {
        self.maximumRequestBytes = maximumRequestBytes
        framer = LineFramer(maximumLineLength: maximumRequestBytes, delimiter: framing.terminator)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard framer != nil else { return }
        unwrapInboundIn(data).withUnsafeReadableBytes { framer!.append($0) }
        while framer != nil {
            let line: [UInt8]
            do {
                guard let next = try framer!.nextLine() else {
                    if !begunReported, framer!.bufferedCount > 0 {
                        begunReported = true
                        context.fireUserInboundEventTriggered(RequestBegun())
                    }
                    return
                }
                line = Array(next)
            } catch {
                framer = nil
                context.fireChannelRead(wrapInboundOut(.tooLarge))
                return
            }
            begunReported = false
            context.fireChannelRead(wrapInboundOut(.request(line)))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            if let rest = framer?.remainder, !rest.isEmpty, rest.count <= maximumRequestBytes {
                context.fireChannelRead(wrapInboundOut(.request(rest)))
            }
            framer = nil
            context.fireUserInboundEventTriggered(event)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }
}
