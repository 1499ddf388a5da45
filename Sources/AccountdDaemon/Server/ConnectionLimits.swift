import NIOCore
import Synchronization

/// Counts open connections against `limits.maxConnections`.
final class ConnectionCounter: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// Takes a slot; false when the limit is reached (the slot is not taken).
    func enter() -> Bool {
        let now = open.add(1, ordering: .relaxed).newValue
        if now > limit {
            open.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func leave() { open.subtract(1, ordering: .relaxed) }

    var count: Int { open.load(ordering: .relaxed) }
}

/// Whether a connection is in the middle of something (a request, or a Watch), so
/// that the idle timeout leaves it alone.
final class ConnectionActivity: Sendable {
    private let busy = Atomic<Int>(0)

    func begin() { busy.add(1, ordering: .relaxed) }
    func end() { busy.subtract(1, ordering: .relaxed) }
    var isBusy: Bool { busy.load(ordering: .relaxed) > 0 }
}

/// Closes a connection that has neither sent nor received anything for the idle
/// timeout (`requests.idleTimeoutSeconds`), unless it is busy.
final class IdleCloser: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let activity: ConnectionActivity

    init(activity: ConnectionActivity) { self.activity = activity }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .all, !activity.isBusy {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
