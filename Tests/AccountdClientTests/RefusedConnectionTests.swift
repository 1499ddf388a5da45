import AccountdClient
import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A daemon at its connection limit answers a new connection with `TooManyConnections` and
/// closes it, maybe before the client's request went out: the client reports the refusal,
/// not a failed write.
@Suite struct RefusedConnectionTests {
    @Test func aRefusalWrittenBeforeTheRequestIsWhatTheCallThrows() async throws {
        let dir = TestDirectory()
        let path = dir.sub("refusing.sock")
        let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(server >= 0)
        defer { close(server) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(server, 1) == 0)
        let refusal =
            #"{"error":"io.accountd.TooManyConnections","parameters":{"message":"uid 65534 has 4 connections, limits.maxConnectionsPerUid","limit":4}}"#
            + "\n"

        let client = try await AccountdClient.connect(socketPath: path)
        let accepted = accept(server, nil, nil)
        try #require(accepted >= 0)
        _ = refusal.withCString { write(accepted, $0, strlen($0)) }
        close(accepted)
        // The client sees the end of the connection before it sends anything.
        try await Task.sleep(for: .milliseconds(300))
        do {
            try await client.ping()
            Issue.record("a refused connection answered a ping")
        } catch let error as AccountdClientError {
            #expect(error.errorName == .tooManyConnections, "\(error)")
        }
    }
}
