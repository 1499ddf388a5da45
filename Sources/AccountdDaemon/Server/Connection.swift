import AccountdProtocol
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// One client connection: reads request lines, answers them in order, and never
/// throws: a bad client gets an error reply (and, for an oversized request, a
/// closed connection) while everyone else is served.
struct Connection {
    let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    let peer: PeerCredentials
    let activity: ConnectionActivity
    let dispatcher: Dispatcher
    let hub: EventHub
    let maximumRequestBytes: Int
    let logger: Logger

    func run() async {
        let stopping = Atomic<Bool>(false)
        let nioChannel = channel.channel
        do {
            try await withGracefulShutdownHandler {
                try await channel.executeThenClose { inbound, outbound in
                    try await serve(inbound, ReplyWriter(outbound: outbound, channel: nioChannel), stopping: stopping)
                }
            } onGracefulShutdown: {
                // Stop reading: a request being handled finishes and is answered; what is left gets ShuttingDown.
                stopping.store(true, ordering: .relaxed)
                nioChannel.close(mode: .input, promise: nil)
            }
        } catch is ClientGone {
            logger.debug("client \(peer) went away mid-reply", metadata: ["peer_uid": "\(peer.uid)"])
        } catch {
            logger.debug("connection from \(peer) ended: \(error)", metadata: ["peer_uid": "\(peer.uid)"])
        }
    }

    private func serve(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, _ writer: ReplyWriter, stopping: borrowing Atomic<Bool>
    ) async throws {
        var framer = LineFramer(maximumLineLength: maximumRequestBytes)
        var watch: Task<Void, Never>?
        defer { watch?.cancel() }
        var handled = 0
        var framingLost = false
        reading: for try await buffer in inbound {
            framer.append(buffer.readableBytesView)
            while true {
                // Fairness: a client that pipelines thousands of requests lets others run between them.
                handled += 1
                if handled % 32 == 0 {
                    try await writer.flush()
                    await Task.yield()
                }
                let line: [UInt8]
                do {
                    guard let next = try framer.nextLine() else { break }
                    line = next
                } catch {
                    try await writer.send(
                        ProtocolError(
                            .requestTooLarge,
                            "a request may be at most \(maximumRequestBytes) bytes (requests.maxBytes); the connection is closed",
                            facts: [("limit", JSONValue(maximumRequestBytes))]
                        ).reply)
                    try await writer.flush()
                    logger.warning("closed a connection from uid \(peer.uid): request over \(maximumRequestBytes) bytes", metadata: ["peer_uid": "\(peer.uid)"])
                    framingLost = true
                    break reading
                }
                if stopping.load(ordering: .relaxed) {
                    try await writer.send(ProtocolError(.shuttingDown, "accountd is shutting down; retry when it is back").reply)
                    try await writer.flush()
                    framingLost = true
                    break reading
                }
                if watch != nil {
                    try await writer.send(
                        ProtocolError(.invalidRequest, "this connection is watching events; open another connection for other requests").reply)
                    continue
                }
                let request: Request
                do {
                    guard let decoded = try Request.decode(line) else { continue }
                    request = decoded
                } catch {
                    try await writer.send(error.reply)
                    continue
                }
                if request.method == .watch {
                    if !request.more {
                        try await writer.send(ProtocolError(.expectedMore, "Watch streams events; send it with \"more\": true").reply)
                        continue
                    }
                    try await writer.flush()
                    activity.begin()  // a watcher is never idle
                    watch = startWatch(writer.outbound)
                    continue
                }
                activity.begin()
                defer { activity.end() }
                try await dispatcher.handle(request, peer: peer, writer: writer)
            }
            try await writer.flush()
        }
        // A last request without its newline still counts (unless the stream was cut off above).
        let rest = framer.remainder
        if !framingLost, !rest.isEmpty, watch == nil, !stopping.load(ordering: .relaxed), rest.count <= maximumRequestBytes {
            do {
                if let request = try Request.decode(rest), request.method != .watch {
                    try await dispatcher.handle(request, peer: peer, writer: writer)
                }
            } catch let error as ProtocolError {
                try await writer.send(error.reply)
            }
            try await writer.flush()
        }
    }

    /// Streams events to this connection until it closes.
    private func startWatch(_ outbound: ReplyWriter.Outbound) -> Task<Void, Never> {
        let events = hub.subscribe()
        return Task {
            for await event in events {
                let reply = Reply(parameters: event, continues: true)
                do {
                    try await outbound.write(ByteBuffer(string: reply.encoded()))
                } catch {
                    return
                }
            }
        }
    }
}
