import AccountdProtocol
import NIOCore
import Synchronization
import Dispatch

/// The client went away while replies were being written.
struct ClientGone: Error {}

/// Buffers one connection's replies and writes them in order.
///
/// Replies to pipelined requests are gathered and written together when the
/// connection has handled what it read, which keeps a busy client's replies to few
/// writes. Owned by its connection's task.
final class ReplyWriter {
    typealias Outbound = NIOAsyncChannelOutboundWriter<ByteBuffer>
    let outbound: Outbound
    /// The channel itself, for small replies written from its own event loop.
    private let channel: any Channel
    private var pending = ""
    private static let flushThreshold = 64 * 1024

    init(outbound: Outbound, channel: any Channel) {
        self.outbound = outbound
        self.channel = channel
        pending.reserveCapacity(4096)
    }

    func send(_ reply: Reply) async throws {
        reply.encode(into: &pending)
        if pending.utf8.count >= Self.flushThreshold { try await flush() }
    }

    func flush() async throws {
        guard !pending.isEmpty else { return }
        let buffer = ByteBuffer(string: pending)
        pending.removeAll(keepingCapacity: true)
        // Small replies, written on the channel's own event loop (where connections run),
        // go straight to the channel: no suspension, no hop. Larger ones go through the
        // async writer, which waits while the client is not reading.
        if buffer.readableBytes < Self.flushThreshold, channel.eventLoop.inEventLoop {
            guard channel.isActive else { throw ClientGone() }
            channel.writeAndFlush(NIOAny(buffer), promise: nil)
            return
        }
        do {
            try await outbound.write(buffer)
        } catch {
            throw ClientGone()
        }
    }

    /// A function that writes bytes from a blocking thread, waiting until they are handed to the
    /// socket: how a slow reader slows an export down instead of growing the daemon's memory.
    var blockingWrite: @Sendable ([UInt8]) throws -> Void {
        let outbound = outbound
        return { bytes in
            let done = DispatchSemaphore(value: 0)
            let failed = Mutex(false)
            Task {
                do { try await outbound.write(ByteBuffer(bytes: bytes)) } catch { failed.withLock { $0 = true } }
                done.signal()
            }
            done.wait()
            if failed.withLock({ $0 }) { throw ClientGone() }
        }
    }
}
