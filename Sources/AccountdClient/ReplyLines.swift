import AccountdProtocol
import NIOCore

/// Splits what the daemon sends into reply lines and hands them on in batches.
///
/// Lines are framed by `LineFramer` with ``AccountdClient/maximumReplyLength``. A batch
/// is everything complete in one read; handing it on waits while ``ReplyInbox`` is full,
/// so a client that reads slowly slows the socket down instead of buffering a whole export.
enum ReplyLines {
    /// Reads `inbound` until it ends, sending each read's lines to `inbox`.
    ///
    /// - Throws: `LineFramer.LineTooLong` for an over-long line, or the channel's error.
    static func read(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, into inbox: ReplyInbox) async throws {
        var framer = LineFramer(maximumLineLength: AccountdClient.maximumReplyLength)
        for try await buffer in inbound {
            buffer.withUnsafeReadableBytes { framer.append($0) }
            var lines: [ArraySlice<UInt8>] = []
            while let line = try framer.nextLine() { lines.append(line) }
            if !lines.isEmpty { await inbox.send(lines) }
        }
    }
}
