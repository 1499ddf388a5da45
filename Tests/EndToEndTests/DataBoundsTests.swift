import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// What one read grantee's `Query` can cost the others is bounded even when each step of its
/// statement is expensive: a statement that calls functions never runs on an event loop, the
/// timeout holds to within a few steps, and one reply without `more` holds a bounded number of
/// bytes.
@Suite struct DataBoundsTests {
    /// Each row of it calls two functions over 8 MB: tens of milliseconds a step.
    static let heavy = "SELECT length(hex(randomblob(8000000))) + length(hex(randomblob(8000000)))"

    @Test func aShortQueryOfExpensiveFunctionsNeverHoldsAnEventLoop() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "60000"])
        // Warm: the statement is compiled and its connection idle, as a point read's is.
        let warm = try daemon.client()
        #expect(try warm.callOne(DataCalls.query("alice", Self.heavy)).error == nil)
        // Four connections run it in a loop, so both event loops would be held by it.
        let stop = Atomic(false)
        var loops: [Thread] = []
        for _ in 0..<4 {
            nonisolated(unsafe) let client = try daemon.client()
            let thread = Thread {
                while !stop.value { _ = try? client.callOne(DataCalls.query("alice", Self.heavy)) }
                close(client.fd)
            }
            thread.start()
            loops.append(thread)
        }
        defer { stop.value = true }
        Thread.sleep(forTimeInterval: 1)
        var slowest = 0.0
        for _ in 0..<10 {
            let ping = try daemon.client()
            let started = Date()
            #expect(try ping.callOne("ping").error == nil)
            slowest = max(slowest, Date().timeIntervalSince(started))
            close(ping.fd)
        }
        #expect(slowest < 1, "a ping waited \(slowest) s while short Queries of expensive functions ran")
    }

    @Test func theTimeoutHoldsWhenEachStepIsExpensive() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS": "500"])
        let client = try daemon.client()
        let endless = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT sum(length(hex(randomblob(8000000)))) FROM r"
        let started = Date()
        let reply = try client.callOne(DataCalls.query("alice", endless))
        let took = Date().timeIntervalSince(started)
        #expect(reply.error == .queryTimeout, "\(reply.parameters)")
        #expect(took < 2.5, "a 500 ms timeout stopped the statement after \(took) s")
    }

    @Test func oneReplyWithoutMoreHoldsABoundedNumberOfBytes() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        // Five values of 10 MB: three fit in the 32 MiB of a reply, the fourth does not.
        let sql = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n, zeroblob(10000000) FROM r"
        let whole = try client.callOne(DataCalls.query("alice", sql))
        #expect(whole.error == nil, "\(whole.parameters)")
        #expect(whole.parameters["rowCount"] == 3 && whole.parameters["truncated"] == true, "\(whole.parameters["rowCount"] ?? .null)")
        // One value of the largest size still comes back whole.
        let one = try client.callOne(DataCalls.query("alice", "SELECT length(zeroblob(16000000)), zeroblob(16000000)"))
        #expect(one.parameters["rowCount"] == 1 && one.parameters["truncated"] == false, "\(one.parameters["rowCount"] ?? .null)")
        // With more, every row streams.
        let streamed = try client.call(DataCalls.query("alice", sql, more: true))
        #expect(streamed.last?.parameters == ["rowCount": 5, "truncated": false])
    }
}

/// A flag shared with a test's threads.
private final class Atomic: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Bool
    init(_ value: Bool) { stored = value }
    var value: Bool {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
