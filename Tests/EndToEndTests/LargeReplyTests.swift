import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Large `Query` replies (without `more`) whose clients read nothing (hostile31 F-loop, F-mem):
/// each is made and encoded on the blocking pool, never on an event loop, so another client's
/// `Ping` on the same loop is answered at once; and the bytes held for clients that have not
/// read them are bounded by `limits.replyBytesPerUid` and `limits.replyBytes` (``ReplyBudget``),
/// a reply past them refused with `AccountBusy`, so the daemon's memory stays bounded.
@Suite(.enabled(
    if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && FileManager.default.isExecutableFile(atPath: "/usr/bin/socat")
        && getpwnam("nobody")?.pointee.pw_uid == 65534 && getpwnam("daemon")?.pointee.pw_uid == 1,
    "needs root, setpriv, socat, and the users nobody (65534) and daemon (1)"))
struct LargeReplyTests {
    /// Two rows of a 16 MB blob (the third is past the 32 MiB bound): about 43 MB of JSON.
    static let large = "SELECT zeroblob(16000000) FROM (VALUES (1), (2), (3))"

    /// A client of uid `nobody` that sends `line` and never reads: a `socat` whose input stays open.
    final class SilentClient {
        let process = Process()
        let input = Pipe()

        init(socket: String, line: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/socat", "-u", "STDIN", "UNIX-CONNECT:\(socket)"]
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try E2E.spawning { try process.run() }
            input.fileHandleForWriting.write(Data((line + "\n").utf8))
        }

        /// Kills it: a child of the test runner may inherit SIGTERM blocked, and would not stop.
        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test func unreadLargeRepliesNeitherHoldUpTheEventLoopsNorGrowMemory() throws {
        let dir = TestDirectory()
        let daemon = try FairShareTests.daemon(dir, limits: "  maxConnections: 256\n  queryTimeoutMs: 30000\n  replyBytesPerUid: 67108864")
        let pid = daemon.process.processIdentifier
        let before = try #require(Hostile.rssKiB(pid))

        // 40 connections of nobody, each asking a 43 MB reply and reading none of it.
        var silent: [SilentClient] = []
        defer { silent.forEach { $0.stop() } }
        for _ in 0..<40 { silent.append(try SilentClient(socket: daemon.socket, line: DataCalls.query("nobody", Self.large))) }

        // Meanwhile another client's Ping is answered at once, every time, and the memory stays bounded.
        var slowest = 0.0
        var largest = before
        let until = Date().addingTimeInterval(8)
        while Date() < until {
            let client = try daemon.client()
            let started = Date()
            #expect(try client.callOne("ping").error == nil)
            slowest = max(slowest, Date().timeIntervalSince(started))
            largest = max(largest, Hostile.rssKiB(pid) ?? 0)
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(slowest < 1, "a Ping took \(slowest) s behind the unread replies")
        // One reply of 43 MB fits nobody's 64 MiB; the rest are refused. Rows being read and encoded
        // on the pool add to it for a moment: about three times the budget at most (README).
        let grown = (largest - before) / 1024
        #expect(grown < 512, "the daemon grew by \(grown) MiB for 40 unread replies (from \(before / 1024) MiB)")

        // Another uid's Ping and Query are answered quickly, and so is nobody's own small Query.
        for (uid, account) in [(FairShareTests.daemonUser, "daemon"), (FairShareTests.nobody, "nobody")] {
            let started = Date()
            let answered = try AccessTests.accountctl(as: uid, socket: daemon.socket, ["query", "--account", account, "--json", "SELECT 1"])
            let took = Date().timeIntervalSince(started)
            #expect(answered.status == 0, "\(answered.stderr)")
            #expect(took < 2, "uid \(uid)'s Query SELECT 1 took \(took) s")
        }
        let pinged = try AccessTests.accountctl(as: FairShareTests.daemonUser, socket: daemon.socket, ["ping"])
        #expect(pinged.status == 0, "\(pinged.stderr)")
    }

    @Test func aReplyOverTheUidsBudgetIsRefusedWithTheSettingAndASmallerOneComesWhole() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_REPLY_BYTES_PER_UID": "1048576"])
        let client = try daemon.client()

        let refused = try client.callOne(DataCalls.query("alice", "SELECT zeroblob(2000000)"))
        #expect(refused.error == .accountBusy, "\(refused.parameters)")
        let message = refused.parameters["message"]?.stringValue ?? ""
        #expect(message.contains("limits.replyBytesPerUid is 1048576"), "\(message)")
        #expect(message.contains("account alice"), "\(message)")
        #expect(refused.parameters["limit"] == 1_048_576)

        // A reply past 64 KiB but within the budget is made on the pool and written whole, in order.
        try client.send(DataCalls.query("alice", "SELECT length(zeroblob(700000)), zeroblob(700000), 'end'") + "\nping\n")
        let whole = try client.readReply()
        #expect(whole.error == nil, "\(whole.parameters)")
        guard case .array(let rows)? = whole.parameters["rows"], case .array(let row)? = rows.first else {
            Issue.record("no rows: \(whole.encoded().prefix(300))")
            return
        }
        #expect(row.count == 3)
        #expect(row.first == 700_000)
        #expect(row.last == "end")
        #expect(try client.readReply().error == nil, "the Ping after it is answered after it")
        // The budget was given back: the same reply again is answered.
        #expect(try client.callOne(DataCalls.query("alice", "SELECT zeroblob(700000)")).error == nil)
    }
}
