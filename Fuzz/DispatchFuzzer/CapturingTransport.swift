@testable import AccountdDaemon
import NIOCore
import Synchronization

/// A ``ReplyTransport`` that keeps every byte the dispatcher writes, in order, for the
/// fuzzer to check: what a client on a socket would have read.
final class CapturingTransport: ReplyTransport {
    private let bytes = Mutex<[UInt8]>([])

    func write(_ buffer: ByteBuffer) async throws(ClientGone) {
        append(buffer)
    }

    /// Called from a pool thread during an export or a switch's progress.
    func writeBlocking(_ buffer: ByteBuffer) throws(ClientGone) {
        append(buffer)
    }

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
