import AccountdProtocol
import Foundation

/// A plain Unix-socket client for tests: sends bytes, reads reply lines.
public final class RawClient {
    public let fd: Int32
    private var framer = LineFramer(maximumLineLength: 256 << 20)

    /// Connects to `path`.
    public init(socket path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(message: "socket(): \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: Array(path.utf8.prefix(buffer.count - 1)))
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        // On failure, deinit closes the descriptor (it runs for a class whose properties are all set).
        guard result == 0 else { throw ClientError(message: "connect(\(path)): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Takes over `fd`, a socket already connected to the daemon (by another process, say);
    /// the client closes it.
    public init(adopting fd: Int32) {
        self.fd = fd
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    /// Sends raw bytes.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw ClientError(message: "send: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// Sends text as is (add the newline yourself).
    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// The next reply line, or nil at end of stream.
    public func readLine() throws -> String? {
        while true {
            if let line = try framer.nextLine() { return String(decoding: line, as: UTF8.self) }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 { return nil }
            guard count > 0 else { throw ClientError(message: "recv: \(String(cString: strerror(errno)))") }
            framer.append(buffer[0..<count])
        }
    }

    /// The next reply, decoded; throws at end of stream.
    public func readReply() throws -> Reply {
        guard let line = try readLine() else { throw ClientError(message: "the daemon closed the connection") }
        return try Reply.decode(Array(line.utf8))
    }

    /// Sends one request line and reads replies up to the last one (the first without `continues`).
    public func call(_ line: String) throws -> [Reply] {
        try send(line + "\n")
        var replies: [Reply] = []
        repeat { replies.append(try readReply()) } while replies.last!.continues
        return replies
    }

    /// Sends a request and returns its single (or last) reply.
    public func callOne(_ line: String) throws -> Reply { try call(line).last! }

    /// Half-closes the sending side.
    public func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

    public struct ClientError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}
