import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SIGTERM ends the daemon after its grace even while statements are inside one long SQLite
/// step (hostile31 F-sigterm): an `instr()` over a text of millions of characters is one call
/// of an SQL function, which neither `limits.queryTimeoutMs` nor the interrupt at SIGTERM stops
/// inside itself. The clients still connected get `ShuttingDown`, not an end of stream, and
/// the daemon exits within its grace (``ShutdownDeadline``), not a minute or more later.
@Suite struct ShutdownGraceTests {
    /// One step of a minute or more: each of two million places compares up to two million bytes.
    static let longStep =
        "SELECT instr(a, b) FROM (SELECT printf('%.*c', 4000000, 'a') AS a, printf('%.*c', 2000000, 'a') || 'b' AS b)"

    @Test func sigtermEndsTheDaemonWithinItsGraceWhileStatementsAreInsideOneLongStep() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "2000"])
        var clients: [RawClient] = []
        for _ in 0..<3 {
            let client = try daemon.client()
            try client.send(DataCalls.query("alice", Self.longStep) + "\n")
            clients.append(client)
        }
        Thread.sleep(forTimeInterval: 2)

        let sent = Date()
        kill(daemon.process.processIdentifier, SIGTERM)
        let exited = waitUntil(timeout: 50, interval: 0.2) { !daemon.process.isRunning }
        let took = Date().timeIntervalSince(sent)
        #expect(exited, "the daemon still ran \(took) s after SIGTERM")
        #expect(took < 25, "exit took \(took) s after SIGTERM")
        daemon.process.waitUntilExit()
        #expect(daemon.process.terminationStatus == 0, "\(daemon.log.suffix(1500))")
        #expect(daemon.log.contains("without waiting for the blocking pool"), "\(daemon.log.suffix(1500))")

        // Each client, still connected at the grace, was told why.
        for client in clients {
            client.setReceiveTimeout(5)
            let reply = try? client.readReply()
            #expect(reply?.error == .shuttingDown, "\(reply.map { $0.encoded() } ?? "end of stream")")
        }
    }
}
