import AccountdProtocol
import NIOCore

/// Splits what the daemon sends into reply lines, on the connection's event loop, and
/// queues each read's lines in the client's ``ReplyInbox``.
///
/// Lines are framed by `LineFramer` with ``AccountdClient/maximumReplyLength``; a line is
/// a slice of the read it came in. When the inbox is full, the channel stops reading
/// until the client has taken a read, so a client that reads slowly slows the socket, and
/// then the daemon, instead of buffering a whole export.
final class ReplyFramer: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private var framer = LineFramer(maximumLineLength: AccountdClient.maximumReplyLength)
    private let inbox: ReplyInbox

    init(inbox: ReplyInbox) {
        self.inbox = inbox
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        inbox.whenRoom { _ = channel.setOption(ChannelOptions.autoRead, value: true) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        unwrapInboundIn(data).withUnsafeReadableBytes { framer.append($0) }
        var lines: [ArraySlice<UInt8>] = []
        do {
            while let line = try framer.nextLine() { lines.append(line) }
        } catch {
            inbox.fail(error)
            context.close(promise: nil)
            return
        }
        if !lines.isEmpty, !inbox.offer(lines) {
            // Full: no more reads until the client takes one (``ReplyInbox/whenRoom(_:)``).
            _ = context.channel.setOption(ChannelOptions.autoRead, value: false)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        inbox.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        inbox.fail(error)
        context.close(promise: nil)
    }
}
