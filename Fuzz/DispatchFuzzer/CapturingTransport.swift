@testable import AccountdDaemon
import NIOCore
import Synchronization

/// A ``ReplyOutput`` that keeps every byte the responder writes, in order, for the
/// fuzzer to check: what a client on a socket would have read.
final class CapturingTransport: ReplyOutput, Sendable {
    private let bytes = Mutex<[UInt8]>([])

    func write(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?) {
        append(buffer)
        promise?.succeed()
    }

    var isActive: Bool { true }
    var isGone: @Sendable () -> Bool { { false } }

    /// Everything written so far; empties the transport.
    func take() -> [UInt8] {
        bytes.withLock { captured in
            defer { captured.removeAll() }
            return captured
        }
    }

    private func append(_ buffer: ByteBuffer) {
        bytes.withLock { $0.append(contentsOf: buffer.readableBytesView) }
    }
}
