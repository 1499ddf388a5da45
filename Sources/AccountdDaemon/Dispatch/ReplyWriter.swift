import AccountdProtocol
import NIOCore

/// The client went away while replies were being written.
struct ClientGone: Error {}

/// Where a connection's reply bytes go: its channel, or (for the fuzzer) a buffer.
protocol ReplyTransport: Sendable {
    /// Writes `bytes`, suspending while the client does not read them.
    func write(_ bytes: ByteBuffer) async throws(ClientGone)
    /// Writes `bytes` from a blocking thread, returning once they are handed to the socket:
    /// how a slow reader slows an export down instead of growing the daemon's memory.
    func writeBlocking(_ bytes: ByteBuffer) throws(ClientGone)
}

/// Buffers the replies to one request and writes them in order.
///
/// Owned by the task handling the request. Replies are gathered until ``flush()`` or
/// until 64 KiB are pending, so a request with many replies goes out in few writes.
final class ReplyWriter {
    private let transport: any ReplyTransport
    private var pending = ""
    static let flushThreshold = 64 * 1024

    init(_ transport: any ReplyTransport) {
        self.transport = transport
    }

    func send(_ reply: Reply) async throws(ClientGone) {
        reply.encode(into: &pending)
        if pending.utf8.count >= Self.flushThreshold { try await flush() }
    }

    func flush() async throws(ClientGone) {
        guard !pending.isEmpty else { return }
        let buffer = ByteBuffer(string: pending)
        pending.removeAll(keepingCapacity: true)
        try await transport.write(buffer)
    }

    /// Writes bytes from a blocking thread (see ``ReplyTransport/writeBlocking(_:)``).
    var blockingWrite: @Sendable ([UInt8]) throws -> Void {
        let transport = transport
        return { bytes in try transport.writeBlocking(ByteBuffer(bytes: bytes)) }
    }
}

/// Writes replies to a NIO channel.
struct ChannelTransport: ReplyTransport {
    let channel: any Channel

    func write(_ bytes: ByteBuffer) async throws(ClientGone) {
        // A small reply written on the channel's own event loop (where requests are handled)
        // goes straight out: no suspension, no hop. A large one waits until it is written.
        if bytes.readableBytes < ReplyWriter.flushThreshold, channel.eventLoop.inEventLoop {
            guard channel.isActive else { throw ClientGone() }
            channel.writeAndFlush(bytes, promise: nil)
            return
        }
        do {
            try await channel.writeAndFlush(bytes).get()
        } catch {
            throw ClientGone()
        }
    }

    func writeBlocking(_ bytes: ByteBuffer) throws(ClientGone) {
        do {
            try channel.writeAndFlush(bytes).wait()
        } catch {
            throw ClientGone()
        }
    }
}

/// Drops every reply: the transport of a varlink `oneway` call, which runs for its effect
/// and gets no reply.
struct DroppedReplies: ReplyTransport {
    func write(_ bytes: ByteBuffer) async throws(ClientGone) {}
    func writeBlocking(_ bytes: ByteBuffer) throws(ClientGone) {}
}
