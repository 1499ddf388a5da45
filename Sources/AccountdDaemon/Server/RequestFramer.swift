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
/// The end of input belongs here too, since only the framer knows what is left unframed:
/// - when the client closes its side, the bytes it sent after its last newline go on as
///   one last request, then the `inputClosed` event;
/// - when the daemon begins to stop, ``Connection/ShutdownRequested`` goes on saying
///   whether the client had begun a request, so that it gets `ShuttingDown` too.
final class RequestFramer: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ConnectionStateMachine.Frame

    private let maximumRequestBytes: Int
    /// Nil once framing ended: after an oversized line, or at the end of input.
    private var framer: LineFramer?

    /// A framer for lines of at most `maximumRequestBytes` (`requests.maxBytes`), line ending
    /// not counted, each ended as `framing` says.
    init(maximumRequestBytes: Int, framing: Framing = .line) {
        self.maximumRequestBytes = maximumRequestBytes
        framer = LineFramer(maximumLineLength: maximumRequestBytes, delimiter: framing.terminator)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard framer != nil else { return }
        framer!.append(unwrapInboundIn(data).readableBytesView)
        while framer != nil {
            let line: [UInt8]
            do {
                guard let next = try framer!.nextLine() else { return }
                line = next
            } catch {
                framer = nil
                context.fireChannelRead(wrapInboundOut(.tooLarge))
                return
            }
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
        case var shutdown as Connection.ShutdownRequested:
            shutdown.unterminatedRequest = (framer?.bufferedCount ?? 0) > 0
            context.fireUserInboundEventTriggered(shutdown)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }
}
