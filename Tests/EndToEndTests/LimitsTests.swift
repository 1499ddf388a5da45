import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The connection limits of docs/PROTOCOL.md, set through the environment: at most
/// `limits.maxConnections` connections, idle ones closed after `limits.idleTimeoutSeconds`,
/// a reader that stops reading slows its own export down instead of growing the daemon,
/// and a client that pipelines thousands of requests does not starve the others.
@Suite struct LimitsTests {
    @Test func connectionsOverTheLimitAreRefusedUntilSomeClose() throws {
        let dir = TestDirectory()
        // No admins' reserve: these clients are root, an admin.
        let daemon = try E2E.daemon(
            directory: dir.path, environment: ["ACCOUNTD_LIMITS_MAX_CONNECTIONS": "8", "ACCOUNTD_LIMITS_ADMIN_RESERVED_CONNECTIONS": "0"])
        // Slots free as the daemon notices closed connections (DaemonProcess's own readiness
        // probe among them), so each of the eight is retried until it is served.
        var open: [RawClient] = []
        for _ in 0..<8 {
            let client = try #require(Self.servedClient(daemon.socket), "connection \(open.count + 1) of 8 was not served")
            open.append(client)
        }
        // The ninth gets one line, TooManyConnections, and is closed.
        try Self.expectRefused(daemon.socket)
        // The eight are still served.
        for client in open { #expect(try client.callOne("ping").error == nil) }

        // After three close, three new ones are accepted (the slots free as the daemon notices).
        open.removeLast(3)
        for _ in 0..<3 {
            let client = Self.servedClient(daemon.socket)
            #expect(client != nil, "a new connection was refused after others closed")
            if let client { open.append(client) }
        }
        #expect(open.count == 8)
        // Full again: refused again.
        try Self.expectRefused(daemon.socket)
        #expect(daemon.log.contains("limits.maxConnections"))
        #expect(daemon.process.isRunning)
    }

    /// A new connection that the daemon serves, trying again for up to 5 s while it is refused.
    static func servedClient(_ socket: String) -> RawClient? {
        var served: RawClient?
        _ = waitUntil(timeout: 5, interval: 0.02) {
            guard let client = try? Hostile.client(socket, timeout: 5), let reply = try? client.callOne("ping"), reply.error == nil else {
                return false
            }
            served = client
            return true
        }
        return served
    }

    static func expectRefused(_ socket: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let ninth = try Hostile.client(socket, timeout: 5)
        // A request sent anyway is not served.
        try? ninth.send("ping\n")
        let result = ninth.readUntilClosed(timeout: 5)
        #expect(result.closed, "the connection over the limit was not closed", sourceLocation: sourceLocation)
        #expect(result.lines.count == 1, "\(result.lines)", sourceLocation: sourceLocation)
        let reply = try Reply.decode(Array((result.lines.first ?? "").utf8))
        #expect(reply.error == .tooManyConnections, sourceLocation: sourceLocation)
        #expect(reply.message?.contains("8") == true, "\(reply.message ?? "")", sourceLocation: sourceLocation)
        #expect(reply.parameters["limit"] == 8, sourceLocation: sourceLocation)
    }

    @Test func idleConnectionsAreClosedButWatchersAndBusyOnesAreNot() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_LIMITS_IDLE_TIMEOUT_SECONDS": "1"])
        let idle = try Hostile.client(daemon.socket)
        #expect(try idle.callOne("ping").error == nil)
        let watcher = try Hostile.client(daemon.socket)
        try watcher.send("watch\n")
        let chatty = try Hostile.client(daemon.socket)
        // A connection that has sent half a request and then nothing is idle too.
        let halfway = try Hostile.client(daemon.socket)
        try halfway.send(#"{"method":"io.accountd.Ping""#)
        let started = Date()

        // Over 3.6 s: the chatty one pings every 300 ms; the idle and half-way ones are closed,
        // without a reply, after about a second.
        var idleClosedAt: Double?, halfwayClosedAt: Double?
        for tick in 0..<36 {
            if tick % 3 == 0 { #expect(try chatty.callOne("ping").error == nil, "the chatty connection was closed") }
            let now = Date().timeIntervalSince(started)
            if idleClosedAt == nil, idle.isClosedNow() { idleClosedAt = now }
            if halfwayClosedAt == nil, halfway.isClosedNow() { halfwayClosedAt = now }
            Thread.sleep(forTimeInterval: 0.1)  // the clock must advance: the test watches 3.6 s of a 1 s idle timeout
        }
        print("LimitsTests idle: idle connection closed after \(idleClosedAt.map { String(format: "%.2f", $0) } ?? "never") s, half-sent one after \(halfwayClosedAt.map { String(format: "%.2f", $0) } ?? "never") s")
        let idleAt = try #require(idleClosedAt, "the idle connection was not closed")
        #expect(idleAt > 0.7 && idleAt < 3, "closed after \(idleAt) s")
        #expect(idle.readUntilClosed(timeout: 1).lines.isEmpty)
        #expect(halfwayClosedAt != nil, "a connection with half a request was not closed")
        // And the watcher, silent for three seconds, still gets events.
        #expect(Date().timeIntervalSince(started) > 3)
        #expect(try chatty.callOne("switch alice").error == nil)
        watcher.setReceiveTimeout(5)
        let event = try watcher.readReply()
        #expect(event.parameters["event"] == "switched")
        #expect(event.parameters["account"] == "alice")
        #expect(event.continues)
        #expect(daemon.process.isRunning)
    }

    /// SIGTERM while a client that stopped reading holds an export in progress, and another
    /// has a ping answered but unread: the daemon still stops, within the grace period for
    /// unread replies (10 s), and exits 0.
    @Test func clientsThatStopReadingDoNotHoldShutdownUp() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [Hostile.itemV1])
        let dataRoot = dir.sub("data")
        try Hostile.makeItemAccount("big", rows: 100_000, dataRoot: dataRoot, bundle: bundle)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        let stalled = try Hostile.client(daemon.socket, timeout: 30)
        try stalled.send(#"{"method":"io.accountd.Export","parameters":{"account":"big","format":"jsonl"},"more":true}"# + "\n")
        let idle = try Hostile.client(daemon.socket, timeout: 30)
        try idle.send("ping\n")
        // The export is under way and unread (over 64 KiB of it waits), and the ping is answered.
        let underWay = waitUntil(timeout: 20) { stalled.bytesWaiting > 64 * 1024 && idle.bytesWaiting > 0 }
        #expect(underWay, "export bytes waiting: \(stalled.bytesWaiting), ping reply bytes waiting: \(idle.bytesWaiting)")

        let start = Date()
        let status = E2E.stop(daemon, timeout: 30)
        let took = Date().timeIntervalSince(start)
        print("LimitsTests shutdown: exited \(status.map(String.init) ?? "not at all") \(String(format: "%.1f", took)) s after SIGTERM with an export unread")
        #expect(status == 0, "accountd did not exit 0 within 30 s of SIGTERM")
        #expect(took < 20)
        // The reply that was answered before SIGTERM reached its client.
        #expect(try idle.readReply().parameters == [:])
    }

    static let rows = 300_000

    @Test func aReaderThatStopsReadingHoldsNoMemoryAndBlocksNoOne() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [Hostile.itemV1])
        let dataRoot = dir.sub("data")
        try Hostile.makeItemAccount("big", rows: Self.rows, dataRoot: dataRoot, bundle: bundle)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        let pid = daemon.process.processIdentifier
        let other = try Hostile.client(daemon.socket, timeout: 5)
        #expect(try other.callOne("switch one").error == nil)
        #expect(try other.callOne("switch two").error == nil)
        #expect(try other.callOne("status big").parameters["state"] == "current")
        let rssBefore = try #require(Hostile.rssKiB(pid))

        // 1. An export of 300k rows (about 25 MB of replies) to a client that does not read.
        let stalled = try Hostile.client(daemon.socket, timeout: 30)
        try stalled.send(#"{"method":"io.accountd.Export","parameters":{"account":"big","format":"jsonl"},"more":true}"# + "\n")
        var peak = rssBefore
        var served = 0
        var slowest = 0.0
        let until = Date().addingTimeInterval(4)
        var index = 0
        while Date() < until {
            peak = max(peak, Hostile.rssKiB(pid) ?? 0)
            // Others are served meanwhile: pings, status, switches between two other accounts.
            let request = ["ping", "status", "switch \(index % 2 == 0 ? "one" : "two")", "status big", "get switch nothing"][index % 5]
            let start = Date()
            let reply = try other.callOne(request)
            slowest = max(slowest, Date().timeIntervalSince(start))
            #expect(reply.error == nil || reply.error == .keyNotFound, "\(request): \(reply.encoded())")
            served += 1
            index += 1
            Thread.sleep(forTimeInterval: 0.05)  // paces the other client over the 4 s the reader stays stalled
        }
        print("LimitsTests backpressure: RSS \(rssBefore / 1024) MiB before, peak \(peak / 1024) MiB while stalled; \(served) requests served, slowest \(Int(slowest * 1000)) ms")
        #expect(peak < rssBefore + 64 * 1024, "RSS grew from \(rssBefore) KiB to \(peak) KiB while the reader was stalled")
        #expect(served > 20)
        #expect(slowest < 2, "another client waited \(slowest) s")

        // The stalled export is still whole: reading it now gives every row, then the summary.
        var rowLines = 0
        var summary: Reply?
        let prefix = #"{"parameters":{"table":"item","row":{"id":"#
        while let line = try stalled.readLine() {
            if line.hasPrefix(prefix) {
                rowLines += 1
                continue
            }
            let reply = try Reply.decode(Array(line.utf8))
            if !reply.continues {
                summary = reply
                break
            }
        }
        #expect(rowLines == Self.rows)
        #expect(summary?.parameters["tables"]?["item"]?.intValue == Int64(Self.rows))

        // 2. Thousands of pipelined pings from a client that never reads: the daemon stops
        // reading from it (its sends would block) instead of buffering replies without end.
        let flooder = try Hostile.client(daemon.socket)
        let (sent, blocked) = Hostile.floodWithPings(flooder)
        let floodPeak = Hostile.rssKiB(pid) ?? 0
        print("LimitsTests flood: \(sent / 5) pings sent before the daemon stopped reading; RSS \(floodPeak / 1024) MiB")
        #expect(blocked, "the daemon kept reading \(sent) bytes of pings that nobody reads the replies of")
        #expect(floodPeak < rssBefore + 64 * 1024)
        #expect(try other.callOne("ping").error == nil)
        #expect(daemon.process.isRunning)
    }

    /// While a connection's Set waits for its commit, the connection reads at most 64 KiB of
    /// the requests pipelined behind it, then stops reading; once the commit is done, it
    /// answers them all, in order.
    @Test func aConnectionWaitingForItsSetReadsOnlyALittleAhead() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let (client, release) = try Hostile.clientWithASetWaitingForItsCommit(daemon, key: "beta", value: #"{"on":true}"#)
        let (sent, blocked) = Hostile.floodWithPings(client)
        print("LimitsTests read-ahead: \(sent) bytes of pings taken while a Set waited")
        #expect(blocked, "the daemon went on reading (\(sent) bytes) while the Set waited")
        // The socket's own buffer, the 64 KiB read ahead, and one read.
        #expect(sent < 2 << 20, "\(sent) bytes were taken in")
        release()

        #expect(try client.readReply().error == nil, "the waiting Set")
        for index in 0..<(sent / 5) {
            let line = try client.readLine()
            guard line == #"{"parameters":{}}"# else {
                Issue.record("reply \(index) to the pipelined pings: \(line ?? "end of stream")")
                return
            }
        }
        #expect(try client.callOne("get switch beta").parameters["value"] == ["on": true])
    }

    @Test func aPipeliningClientDoesNotStarveOthers() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let flooder = Hostile.SharedClient(try Hostile.client(daemon.socket, timeout: 20))
        let stop = E2E.Locked(false)
        let sentCount = E2E.Locked(0)
        let receivedCount = E2E.Locked(0)
        let strays = E2E.Locked<[String]>([])
        let writerDone = DispatchSemaphore(value: 0)
        let readerDone = DispatchSemaphore(value: 0)
        // One thread writes pings in batches as fast as the socket takes them, then half-closes ...
        Thread {
            let batch = Array(String(repeating: "ping\n", count: 256).utf8)
            while !stop.current {
                do { try flooder.client.send(batch) } catch { break }
                sentCount.withLock { $0 += 256 }
            }
            flooder.client.finishSending()
            writerDone.signal()
        }.start()
        // ... another reads the replies, so the flooder itself never blocks for long, until the
        // daemon has answered everything and closes.
        Thread {
            while let line = try? flooder.client.readLine() {
                if line == #"{"parameters":{}}"# {
                    receivedCount.withLock { $0 += 1 }
                } else {
                    strays.withLock { $0.append(line) }
                }
            }
            readerDone.signal()
        }.start()
        #expect(waitUntil(timeout: 10) { receivedCount.current > 5000 }, "the flood did not get going")

        // Meanwhile another client's ping round trips stay short.
        let other = try Hostile.client(daemon.socket, timeout: 5)
        var latencies: [Double] = []
        for _ in 0..<1000 {
            let start = DispatchTime.now().uptimeNanoseconds
            #expect(try other.callOne("ping").error == nil)
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            Thread.sleep(forTimeInterval: 0.001)  // spreads the samples over the flood
        }
        let receivedDuring = receivedCount.current
        stop.withLock { $0 = true }
        #expect(writerDone.wait(timeout: .now() + 10) == .success)
        // Every pipelined ping is answered, in full.
        #expect(readerDone.wait(timeout: .now() + 20) == .success)
        let p50 = Hostile.percentile(latencies, 0.5), p99 = Hostile.percentile(latencies, 0.99)
        print(
            "LimitsTests fairness: \(sentCount.current) pipelined pings (\(receivedDuring) answered while measuring); "
                + "other client's ping p50 \(String(format: "%.2f", p50)) ms, p99 \(String(format: "%.2f", p99)) ms, max \(String(format: "%.2f", latencies.max() ?? 0)) ms")
        #expect(receivedCount.current == sentCount.current)
        #expect(strays.current.isEmpty, "\(strays.current.prefix(3))")
        #expect(receivedDuring > 10_000, "the flooder was not served while the other client measured")
        #expect(p99 < 100, "p99 \(p99) ms")
    }
}
