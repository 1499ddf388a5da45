import AccountdProtocol
import NIOCore
import Synchronization

/// The client went away while replies were being written.
struct ClientGone: Error {}

/// Where a connection's reply bytes go: its channel, or (for the fuzzer) a buffer.
protocol ReplyTransport: Sendable {
    /// Writes `bytes`, suspending while the client does not read them.
    func write(_ bytes: ByteBuffer) async throws(ClientGone)
    /// Writes `bytes` from a blocking thread, returning once the bytes written this way
    /// before them are handed to the socket: one chunk goes out while the next is made, and
    /// a slow reader slows an export down (at most two chunks held) instead of growing the
    /// daemon's memory.
    func writeBlocking(_ bytes: ByteBuffer) throws(ClientGone)
    /// Whether the client went away; cheap and callable from any thread (a running
    /// statement asks it every few thousand steps).
    var isGone: @Sendable () -> Bool { get }
}

extension ReplyTransport {
    var isGone: @Sendable () -> Bool { { false } }
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

    /// Whether the client went away (see ``ReplyTransport/isGone``).
    var isClientGone: @Sendable () -> Bool { transport.isGone }

    /// Writes bytes from a blocking thread (see ``ReplyTransport/writeBlocking(_:)``).
    var blockingWrite: @Sendable ([UInt8]) throws -> Void {
        let transport = transport
        return { bytes in try transport.writeBlocking(ByteBuffer(bytes: bytes)) }
    }
}

/// Writes replies to a NIO channel.
struct ChannelTransport: ReplyTransport {
    let channel: any Channel
    /// The last write from a blocking thread, until the next one waits for it.
    private let blockingWrites = InFlightWrite()

    init(channel: any Channel) {
        self.channel = channel
    }

    func write(_ bytes: ByteBuffer) async throws(ClientGone) {
        // What a blocking thread wrote goes first: the last of it may still be on its way to
        // the event loop, and a write from here could overtake it.
        if let last = blockingWrites.take() {
            do {
                try await last.get()
            } catch {
                throw ClientGone()
            }
        }
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

    /// `Channel.isActive` is read atomically, from any thread.
    var isGone: @Sendable () -> Bool {
        let channel = channel
        return { !channel.isActive }
    }

    func writeBlocking(_ bytes: ByteBuffer) throws(ClientGone) {
        let written = channel.writeAndFlush(bytes)
        do {
            try blockingWrites.replace(with: written)?.wait()
        } catch {
            throw ClientGone()
        }
    }
}

/// The one write a ``ChannelTransport`` has in flight from a blocking thread.
private final class InFlightWrite: Sendable {
    private let last = Mutex<EventLoopFuture<Void>?>(nil)

    /// The write in flight, which is then no longer recorded.
    func take() -> EventLoopFuture<Void>? {
        last.withLock { last in
            defer { last = nil }
            return last
        }
    }

    /// Records `write` as the one in flight and returns the one it follows.
    func replace(with write: EventLoopFuture<Void>) -> EventLoopFuture<Void>? {
        last.withLock { last in
            defer { last = write }
            return last
        }
    }
}

/// Drops every reply: the transport of a varlink `oneway` call, which runs for its effect
/// and gets no reply.
struct DroppedReplies: ReplyTransport {
    func write(_ bytes: ByteBuffer) async throws(ClientGone) {}
    func writeBlocking(_ bytes: ByteBuffer) throws(ClientGone) {}
}
