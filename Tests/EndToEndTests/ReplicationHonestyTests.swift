import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `accountctl replication` and the metrics with a Litestream that lists an account as
/// replicating but has never uploaded it (a store that takes no uploads at all), and with no
/// Litestream answering (hostile33b N3, N8). A stand-in answers Litestream's `GET /list` on
/// its control socket, so the test needs no broken store.
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct ReplicationHonestyTests {
    @Test func anAccountNeverUploadedIsBehindAndNoLitestreamFails() throws {
        let dir = TestDirectory()
        let run = dir.sub("run")
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        let daemon = try E2E.daemon(
            directory: dir.path, environment: E2E.replicationEnvironment(replica: "file://" + dir.sub("replica"), runDirectory: run))
        let client = try daemon.client()
        for account in ["stale", "fresh"] { #expect(try client.callOne("switch \(account)").error == nil) }
        try ReplicationTests.set(client, "word", "waiting", account: "stale")
        // Its changes have waited a minute (the file and its WAL last written then).
        let minuteAgo = Date().addingTimeInterval(-60)
        for file in [daemon.accountPath("stale"), daemon.accountPath("stale") + "-wal"] where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.setAttributes([.modificationDate: minuteAgo], ofItemAtPath: file)
        }
        let (stalePath, freshPath) = (daemon.accountPath("stale"), daemon.accountPath("fresh"))
        let fake = try FakeLitestreamList(path: run + "/litestream.sock") {
            let now = ISO8601DateFormatter().string(from: Date())
            return #"{"databases":[{"path":"\#(stalePath)","status":"replicating"},"#
                + #"{"path":"\#(freshPath)","status":"replicating","last_sync_at":"\#(now)"}]}"#
        }
        defer { fake.close() }

        let json = try E2E.accountctl(["--json", "replication"], socket: daemon.socket)
        let parsed = try JSONParser.parse(json.stdout)
        let stale = parsed["accounts"]?.arrayValue?.first { $0["account"] == "stale" }
        let fresh = parsed["accounts"]?.arrayValue?.first { $0["account"] == "fresh" }
        #expect(json.status == 1 && parsed["behind"] == 1, "\(json)")
        #expect(stale?["status"] == "behind" && (stale?["secondsBehind"].flatMap(ObjectStoreReplicationTests.number) ?? 0) >= 55, "\(json.stdout)")
        #expect(fresh?["status"] == "replicating", "\(json.stdout)")
        let table = try E2E.accountctl(["replication"], socket: daemon.socket)
        #expect(table.status == 1 && table.stdout.contains("never uploaded") && table.stderr.contains("have not reached the replica"), "\(table)")
        let metrics = try client.callOne("metrics").parameters["text"]?.stringValue ?? ""
        #expect(metrics.contains("accountd_replication_accounts{state=\"behind\"} 1"), "\(metrics)")
        let lag = metrics.split(separator: "\n").first { $0.hasPrefix("accountd_replication_lag_seconds ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        #expect((lag ?? 0) >= 55, "\(metrics)")

        // Litestream's failed uploads touch the file (hostile33e #8): nothing of it reached the
        // replica, so its lag goes on from where it was, never from the touch.
        for file in [stalePath, stalePath + "-wal"] where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file)
        }
        let touched = try E2E.accountctl(["--json", "replication"], socket: daemon.socket)
        let staleAgain = try JSONParser.parse(touched.stdout)["accounts"]?.arrayValue?.first { $0["account"] == "stale" }
        #expect(touched.status == 1 && staleAgain?["status"] == "behind", "\(touched)")
        #expect((staleAgain?["secondsBehind"].flatMap(ObjectStoreReplicationTests.number) ?? 0) >= 55, "\(touched.stdout)")

        // Litestream gone: nothing is replicated, and the check fails (table and --json).
        fake.close()
        try? FileManager.default.removeItem(atPath: run + "/litestream.sock")
        Thread.sleep(forTimeInterval: 1.2)
        let gone = try E2E.accountctl(["replication"], socket: daemon.socket)
        #expect(gone.status == 1 && gone.stderr.contains("Litestream is not running"), "\(gone)")
        #expect(try E2E.accountctl(["--json", "replication"], socket: daemon.socket).status == 1)
    }
}

/// A stand-in for Litestream's control socket: answers every request with `GET /list`'s
/// body from `body`, on a thread of its own (it blocks in accept), until closed.
final class FakeLitestreamList: @unchecked Sendable {
    let fd: Int32
    private let closed = E2E.Locked(false)

    init(path: String, body: @escaping @Sendable () -> String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8.prefix($0.count - 1))) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { throw SystemdTestError("bind/listen \(path): \(String(cString: strerror(errno)))") }
        let listener = fd
        Thread.detachNewThread {
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                var request: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: request, as: UTF8.self).contains("\r\n\r\n") {
                    let count = read(connection, &buffer, buffer.count)
                    guard count > 0 else { break }
                    request += buffer[0..<count]
                }
                let text = body()
                let answer = Array("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)".utf8)
                _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                Glibc.close(connection)
            }
        }
    }

    /// Stops answering (once): nothing listens on the path any more.
    func close() {
        guard !closed.withLock({ let was = $0; $0 = true; return was }) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }
}
