import Foundation
import NIOCore
import NIOPosix

/// One request to Litestream's control socket and its whole answer, on an event loop, with
/// a hard deadline: a Litestream that accepts and never answers costs one socket for
/// `timeout`, and no thread at all.
struct LitestreamExchange: Sendable {
    /// The control socket.
    var socketPath: String
    /// How long the whole exchange (connect, write, read to the end) may take.
    var timeout: TimeAmount
    /// The most an answer may hold; a longer one fails the exchange.
    var maximumAnswerBytes = 16 << 20

    /// Sends `request` and returns every byte of the answer, up to the peer closing.
    ///
    /// - Throws: ``LitestreamControl/Failure`` when the socket does not answer, fails, or
    ///   `timeout` passes first.
    func send(_ request: [UInt8]) async throws -> [UInt8] {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let promise = loop.makePromise(of: [UInt8].self)
        let (socketPath, timeout, limit) = (socketPath, timeout, maximumAnswerBytes)
        let deadline = loop.scheduleTask(in: timeout) {
            promise.fail(
                LitestreamControl.Failure(
                    description: "Litestream's control socket \(socketPath) did not answer within \(Self.seconds(timeout)) s; is accountd-litestream stuck?",
                    timedOut: true))
        }
        let connected = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AnswerCollector(promise: promise, limit: limit, socketPath: socketPath))
                }
            }
            .connect(unixDomainSocketPath: socketPath)
        connected.whenComplete { result in
            switch result {
            case .success(let channel):
                // However the exchange ends (answer, deadline, failure), the socket closes.
                promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
                var buffer = channel.allocator.buffer(capacity: request.count)
                buffer.writeBytes(request)
                channel.writeAndFlush(buffer).whenFailure { error in
                    promise.fail(LitestreamControl.Failure(description: "writing to Litestream's control socket \(socketPath) failed: \(error)"))
                }
            case .failure(let error):
                let errno = (error as? IOError)?.errnoCode
                promise.fail(
                    LitestreamControl.Failure(
                        description: "Litestream's control socket \(socketPath) does not answer: \(error); is accountd-litestream running?",
                        notRunning: errno == ECONNREFUSED || errno == ENOENT))
            }
        }
        promise.futureResult.whenComplete { _ in deadline.cancel() }
        return try await promise.futureResult.get()
    }

    static func seconds(_ amount: TimeAmount) -> String {
        let seconds = Double(amount.nanoseconds) / 1e9
        return seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
    }
}

/// Collects an answer until the peer closes, then completes `promise` with it.
private final class AnswerCollector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let promise: EventLoopPromise<[UInt8]>
    private let limit: Int
    private let socketPath: String
    private var answer: [UInt8] = []

    init(promise: EventLoopPromise<[UInt8]>, limit: Int, socketPath: String) {
        self.promise = promise
        self.limit = limit
        self.socketPath = socketPath
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard answer.count + buffer.readableBytes <= limit else {
            promise.fail(LitestreamControl.Failure(description: "Litestream's control socket \(socketPath) answered more than \(limit) bytes"))
            context.close(promise: nil)
            return
        }
        answer += buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A promise completes once; after a deadline or a failure, this changes nothing.
        promise.succeed(answer)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(LitestreamControl.Failure(description: "reading Litestream's answer on \(socketPath) failed: \(error)"))
        context.close(promise: nil)
    }
}
