import AccountdCore
import AccountdProtocol
import Foundation
import NIOCore

/// A client of Litestream's control socket (HTTP over a Unix socket, turned on by the
/// configuration accountd writes): the replication status of each database, and the
/// final sync before accountd removes a file.
///
/// One HTTP/1.0 exchange per call, written out by hand: the daemon has no HTTP client among
/// its dependencies. Every exchange runs on an event loop with a hard deadline
/// (``LitestreamExchange``): a Litestream that accepts and never answers costs one socket
/// until the deadline, and no thread at all.
struct LitestreamControl: Sendable {
    /// The socket (``ReplicationSettings/controlSocketPath``).
    var socketPath: String

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
        /// True when Litestream took the request and did not answer before the deadline.
        var timedOut = false
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
    /// has it (`POST /sync` with `wait`), for at most `timeout`. A database Litestream has
    /// just found is initialised by this too: without it, a file removed moments after its
    /// creation would leave nothing in the replica.
    ///
    /// - Returns: false when Litestream does not know the database, or has stopped replicating
    ///   it (`litestream stop`): there is nothing it would sync.
    /// - Throws: ``Failure`` (``Failure/timedOut`` once `timeout` has passed without an answer).
    func syncAndWait(_ path: String, within timeout: TimeAmount) async throws -> Bool {
        var body = ""
        JSONValue.object([("path", .string(path)), ("wait", true), ("timeout", .int(Self.litestreamSeconds(timeout)))]).write(to: &body)
        let (status, answer) = try await exchange("POST", "/sync", body: body, within: timeout)
        if status == 404 || status == 409 { return false }
        guard status == 200 else {
            throw Failure(description: "Litestream could not sync \(path) (status \(status)): \(answer.prefix(300))")
        }
        return true
    }

    /// Asks Litestream to let `path` go (`POST /unregister`), for at most `timeout`: it syncs
    /// it once more and closes its handles. A database Litestream does not know is not an error.
    func unregister(_ path: String, within timeout: TimeAmount) async throws {
        var body = ""
        JSONValue.object([("path", .string(path)), ("timeout", .int(Self.litestreamSeconds(timeout)))]).write(to: &body)
        let (status, answer) = try await exchange("POST", "/unregister", body: body, within: timeout)
        guard status == 200 else {
            throw Failure(description: "Litestream could not let go of \(path) (status \(status)): \(answer.prefix(300))")
        }
    }

    /// The time Litestream is given for a request, in whole seconds: a second less than
    /// `timeout`, so that a sync too slow for it is answered by Litestream, with its reason,
    /// before the deadline.
    static func litestreamSeconds(_ timeout: TimeAmount) -> Int64 {
        max(1, timeout.nanoseconds / 1_000_000_000 - 1)
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

    /// One HTTP/1.0 request and its whole answer, within `timeout` (``LitestreamExchange``).
    private func exchange(_ method: String, _ target: String, body: String?, within timeout: TimeAmount) async throws -> (Int, String) {
        let payload = Array(body?.utf8 ?? "".utf8)
        var request = "\(method) \(target) HTTP/1.0\r\nHost: litestream\r\nConnection: close\r\n"
        if body != nil { request += "Content-Type: application/json\r\nContent-Length: \(payload.count)\r\n" }
        let answer = try await LitestreamExchange(socketPath: socketPath, timeout: timeout).send(Array((request + "\r\n").utf8) + payload)
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
