import AccountdProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A blocking client connection to accountd over its Unix stream socket.
///
/// Requests go out as one JSON line each; replies are framed with ``LineFramer`` and
/// decoded with ``Reply/decode(_:)``. A daemon error reply becomes a ``ClientError``
/// (exit 1), and a connection that ends before the last reply becomes one with exit 69.
final class Connection {
    /// The longest reply line accepted: an export chunk or a big value can be large.
    static let maximumReplyLength = 64 << 20
    /// `sun_path` holds this many bytes, the terminating NUL included.
    static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    #if canImport(Glibc)
    /// A write to a closed socket fails with EPIPE instead of raising SIGPIPE.
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    private static let sendFlags: Int32 = 0
    #endif

    /// The socket's path, for messages.
    let socketPath: String
    private let descriptor: Int32
    private var framer = LineFramer(maximumLineLength: Connection.maximumReplyLength)
    private var readBuffer = [UInt8](repeating: 0, count: 256 * 1024)

    /// Connects to the socket at `socketPath`.
    ///
    /// - Throws: ``ClientError`` (exit 69) for a missing socket, a refused connection,
    ///   a permission problem, or any other failure to connect.
    init(socketPath: String) throws {
        self.socketPath = socketPath
        let path = Array(socketPath.utf8)
        guard !path.isEmpty, path.count < Self.maximumPathLength else {
            throw ClientError.unreachable(socket: socketPath, reason: "the path does not fit in a Unix socket address")
        }
        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw ClientError.unreachable(socket: socketPath, reason: Self.describe(errno)) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        var result: Int32
        repeat {
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        } while result != 0 && errno == EINTR
        guard result == 0 else {
            let code = errno
            close(fd)
            throw ClientError.unreachable(socket: socketPath, reason: Self.describe(code))
        }
        self.descriptor = fd
    }

    deinit { close(descriptor) }

    /// Sends one request line.
    ///
    /// - Throws: ``ClientError`` (exit 69) when the daemon has closed the connection.
    func sendRequest(_ request: Request) throws {
        let line = Array((request.encoded() + "\n").utf8)
        var offset = 0
        while offset < line.count {
            let written = line.withUnsafeBytes { raw in
                send(descriptor, raw.baseAddress! + offset, raw.count - offset, Self.sendFlags)
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw ClientError.connectionLost(socket: socketPath, "sending the request failed: \(Self.describe(errno))")
            }
            offset += written
        }
    }

    /// Reads the next reply, error replies included.
    ///
    /// - Throws: ``ClientError`` (exit 69) when the connection ends first or the line is
    ///   not a reply.
    func nextReply() throws -> Reply {
        try decode(nextLine())
    }

    private func decode(_ line: [UInt8]) throws -> Reply {
        do {
            return try Reply.decode(line)
        } catch {
            throw ClientError.connectionLost(socket: socketPath, "\(error.message); is accountd listening on this socket?")
        }
    }

    /// Reads the next reply line, undecoded.
    func nextLine() throws -> [UInt8] {
        while true {
            let line: [UInt8]?
            do {
                line = try framer.nextLine()
            } catch {
                throw ClientError.connectionLost(
                    socket: socketPath, "a reply is longer than \(error.limit >> 20) MiB; is accountd listening on this socket?")
            }
            if let line { return line }
            let count = readBuffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ClientError.connectionLost(socket: socketPath, "reading the reply failed: \(Self.describe(errno))")
            }
            if count == 0 {
                throw ClientError.connectionLost(socket: socketPath, "the daemon closed the connection before its reply was complete")
            }
            framer.append(readBuffer[0..<count])
        }
    }

    /// Sends a request that gets one reply, and returns that reply's parameters.
    ///
    /// - Throws: ``ClientError``: the daemon's error (exit 1), or a lost connection (69).
    func call(_ method: Method, _ parameters: [(String, JSONValue)] = []) throws -> JSONValue {
        try sendRequest(Request(method: method, parameters: Parameters(parameters)))
        return try Self.checked(nextReply()).parameters
    }

    /// Sends a request with `more: true` and hands every reply but the last to `each`.
    ///
    /// - Returns: the parameters of the last reply, the one without `continues`.
    /// - Throws: ``ClientError`` for an error reply or a lost connection, or whatever
    ///   `each` throws.
    func stream(
        _ method: Method, _ parameters: [(String, JSONValue)] = [],
        each: (JSONValue) throws -> Void
    ) throws -> JSONValue {
        try sendRequest(Request(method: method, parameters: Parameters(parameters), more: true))
        while true {
            let reply = try Self.checked(nextReply())
            guard reply.continues else { return reply.parameters }
            try each(reply.parameters)
        }
    }

    /// Like ``stream(_:_:each:)``, but offers every line undecoded to `raw` first; a line
    /// `raw` takes (returns true for) is not decoded at all. For bulk data, where decoding
    /// each reply would cost more than the data is worth.
    func streamLines(
        _ method: Method, _ parameters: [(String, JSONValue)] = [],
        raw: ([UInt8]) throws -> Bool, each: (JSONValue) throws -> Void
    ) throws -> JSONValue {
        try sendRequest(Request(method: method, parameters: Parameters(parameters), more: true))
        while true {
            let line = try nextLine()
            if try raw(line) { continue }
            let reply = try Self.checked(decode(line))
            guard reply.continues else { return reply.parameters }
            try each(reply.parameters)
        }
    }

    private static func checked(_ reply: Reply) throws -> Reply {
        if let error = reply.error { throw ClientError.daemon(error, message: reply.message) }
        return reply
    }

    private static func describe(_ code: Int32) -> String {
        switch code {
        case ENOENT: "no such file (the daemon is not running, or uses another socket)"
        case ECONNREFUSED: "connection refused (nothing is listening; the daemon may have stopped)"
        case EACCES, EPERM:
            "permission denied (the socket is mode 0660: join the daemon's group, or use sudo)"
        default: String(cString: strerror(code))
        }
    }
}
