import AccountdCore
import AccountdProtocol
import Foundation
import NIOCore

/// A client of Litestream's control socket (HTTP over a Unix socket, turned on by the
/// configuration accountd writes): the replication status of each database, and the
/// final sync before accountd removes a file.
///
/// One HTTP/1.0 exchange per call, written out by hand: the daemon has no HTTP client among
/// its dependencies. The status (``databases(within:)``) is asked without blocking, on an
/// event loop with a hard deadline, as anyone may ask for it; the final sync before a
/// removal (admin only, and it may rightly take long) blocks a pool thread, with a deadline
/// on every read and write.
struct LitestreamControl: Sendable {
    /// The socket (``ReplicationSettings/controlSocketPath``).
    var socketPath: String
    /// How long one exchange may take, in seconds.
    var timeoutSeconds: Int = 35

    /// What Litestream says about one database (`GET /list`).
    struct Database: Sendable, Equatable {
        /// The database's path.
        var path: String
        /// `replicating`, `open` or `stopped`.
        var status: String
        /// When the replica last caught up with everything Litestream had read from the WAL.
        var lastSyncAt: Date?
    }

    /// Why Litestream could not be asked.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        /// True when nothing listens on the socket (a file left by a Litestream that is gone):
        /// Litestream is not running, rather than not answering.
        var notRunning = false
    }

    /// Whether Litestream's socket is there at all.
    var isPresent: Bool { FileManager.default.fileExists(atPath: socketPath) }

    /// Every database Litestream replicates, asked on an event loop: the answer, or a
    /// ``Failure`` once `timeout` has passed (or Litestream failed), whatever Litestream does.
    /// No thread waits meanwhile.
    func databases(within timeout: TimeAmount) async throws -> [Database] {
        let request = Array("GET /list HTTP/1.0\r\nHost: litestream\r\nConnection: close\r\n\r\n".utf8)
        let answer = try await LitestreamExchange(socketPath: socketPath, timeout: timeout).send(request)
        let (status, body) = try Self.parse(answer)
        return try Self.databases(status: status, body: body, socketPath: socketPath)
    }

    /// The databases in an answer to `GET /list`.
    static func databases(status: Int, body: String, socketPath: String) throws -> [Database] {
        guard status == 200, let list = (try? JSONParser.parse(body))?["databases"]?.arrayValue else {
            throw Failure(description: "Litestream's control socket \(socketPath) answered GET /list with status \(status): \(body.prefix(300))")
        }
        return list.compactMap { entry in
            guard let path = entry["path"]?.stringValue else { return nil }
            return Database(
                path: path, status: entry["status"]?.stringValue ?? "unknown",
                lastSyncAt: entry["last_sync_at"]?.stringValue.flatMap(Self.date))
        }
    }

    /// Makes Litestream ship everything committed to `path` so far and waits until the replica
    /// has it (`POST /sync` with `wait`). A database Litestream has just found is initialised
    /// by this too: without it, a file removed moments after its creation would leave nothing
    /// in the replica.
    ///
    /// - Returns: false when Litestream does not know the database, or has stopped replicating
    ///   it (`litestream stop`): there is nothing it would sync.
    func syncAndWait(_ path: String) throws -> Bool {
        var body = ""
        JSONValue.object([("path", .string(path)), ("wait", true), ("timeout", .int(Int64(timeoutSeconds - 5)))]).write(to: &body)
        let (status, answer) = try exchange("POST", "/sync", body: body)
        if status == 404 || status == 409 { return false }
        guard status == 200 else {
            throw Failure(description: "Litestream could not sync \(path) (status \(status)): \(answer.prefix(300))")
        }
        return true
    }

    /// Asks Litestream to let `path` go (`POST /unregister`): it syncs it once more and closes
    /// its handles. A database Litestream does not know is not an error.
    func unregister(_ path: String) throws {
        var body = ""
        JSONValue.object([("path", .string(path)), ("timeout", .int(Int64(timeoutSeconds - 5)))]).write(to: &body)
        let (status, answer) = try exchange("POST", "/unregister", body: body)
        guard status == 200 else {
            throw Failure(description: "Litestream could not let go of \(path) (status \(status)): \(answer.prefix(300))")
        }
    }

    /// Litestream's timestamps: RFC 3339 with up to nine fractional digits.
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        // Foundation reads at most three fractional digits: cut the rest.
        var trimmed = text
        if let dot = text.firstIndex(of: "."), let end = text[dot...].firstIndex(where: { $0 == "Z" || $0 == "+" || $0 == "-" }) {
            let digits = text[text.index(after: dot)..<end]
            trimmed = String(text[..<dot]) + "." + digits.prefix(3) + String(text[end...])
        }
        return formatter.date(from: trimmed) ?? ISO8601DateFormatter().date(from: text)
    }

    /// One HTTP/1.0 request and its whole answer.
    private func exchange(_ method: String, _ target: String, body: String?) throws -> (Int, String) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket(): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(socketPath.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw Failure(description: "Litestream's control socket path \(socketPath) is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            throw Failure(description: "Litestream's control socket \(socketPath) does not answer: \(String(cString: strerror(errno))); is accountd-litestream running?")
        }
        let payload = Array(body?.utf8 ?? "".utf8)
        var request = "\(method) \(target) HTTP/1.0\r\nHost: litestream\r\nConnection: close\r\n"
        if body != nil { request += "Content-Type: application/json\r\nContent-Length: \(payload.count)\r\n" }
        let message = Array((request + "\r\n").utf8) + payload
        var sent = 0
        while sent < message.count {
            let n = message[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "writing to Litestream's control socket failed: \(String(cString: strerror(errno)))") }
            sent += n
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else { throw Failure(description: "reading Litestream's answer failed: \(String(cString: strerror(errno)))") }
            answer += buffer[..<n]
        }
        return try Self.parse(answer)
    }

    /// The status code and body of a whole HTTP answer.
    static func parse(_ answer: [UInt8]) throws -> (Int, String) {
        let text = String(decoding: answer, as: UTF8.self)
        guard let headerEnd = text.range(of: "\r\n\r\n"), let statusText = text.split(separator: " ", maxSplits: 2).dropFirst().first,
            let status = Int(statusText)
        else {
            throw Failure(description: "Litestream's control socket gave an answer that is not HTTP: \(text.prefix(200))")
        }
        return (status, String(text[headerEnd.upperBound...]))
    }
}
