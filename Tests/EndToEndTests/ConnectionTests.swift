import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// How one connection answers what it is sent: requests answered at once on the event
/// loop (Ping, Info, Status, Get from memory) and requests handled by a task (Switch,
/// Set, an account's Status) interleave, and the replies still come in request order,
/// each seeing the effects of the ones before it.
@Suite struct ConnectionTests {
    @Test func pipelinedRequestsAreAnsweredInOrderWithEachSeeingTheOnesBefore() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let client = try daemon.client()
        let lines = [
            "get user theme alice",  // 0: alice does not exist yet: the account is opened by a task
            "switch alice",  // 1
            "set user theme \"dark\"",  // 2
            "get user theme",  // 3: answered at once, after the Set before it committed
            "ping",  // 4
            "status alice",  // 5: a task (reads the file)
            "status",  // 6: at once
            "set memory m 1",  // 7
            "get memory m",  // 8
            "set user theme \"light\"",  // 9
            "get user theme",  // 10
            "keys user",  // 11
            "del user theme",  // 12
            "get user theme",  // 13
            "switch bob",  // 14
            "status",  // 15
            "info",  // 16
        ]
        // One write: the daemon reads every request before any reply is read.
        try client.send(lines.joined(separator: "\n") + "\n")
        var replies: [Reply] = []
        for _ in lines { replies.append(try client.readReply()) }

        #expect(replies[0].error == .accountNotFound || replies[0].error == .keyNotFound, "\(replies[0])")
        #expect(replies[1].error == nil && replies[1].parameters["account"] == "alice", "\(replies[1])")
        #expect(replies[2].error == nil && replies[2].parameters == [:], "\(replies[2])")
        #expect(replies[3].parameters["value"] == "dark", "\(replies[3])")
        #expect(replies[4].error == nil && replies[4].parameters == [:], "\(replies[4])")
        #expect(replies[5].parameters["account"] == "alice" && replies[5].parameters["exists"] == true, "\(replies[5])")
        #expect(replies[6].parameters["active"] == "alice", "\(replies[6])")
        #expect(replies[8].parameters["value"] == 1, "\(replies[8])")
        #expect(replies[10].parameters["value"] == "light", "\(replies[10])")
        #expect(replies[11].parameters["keys"] == ["theme"], "\(replies[11])")
        #expect(replies[12].error == nil, "\(replies[12])")
        #expect(replies[13].error == .keyNotFound, "\(replies[13])")
        #expect(replies[14].parameters["previous"] == "alice", "\(replies[14])")
        #expect(replies[15].parameters["active"] == "bob", "\(replies[15])")
        #expect(replies[16].parameters["product"] == "accountd", "\(replies[16])")
    }

    /// A reply of over 64 KiB (a `MethodNotFound` quoting a 100 kB method name) waits when a
    /// task's request begins: writing it makes the channel unwritable and writable again
    /// inside that write. The requests behind still start only after it, in order, and the
    /// daemon stays up (it stopped on a precondition before: hostile32 F1). Any local user may
    /// send this: `list` and an unknown method need no grant.
    @Test func aLargeReplyAheadOfATaskNeitherStopsTheDaemonNorReordersReplies() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let client = try daemon.client()
        let unknown = #"{"method":"io.accountd."# + String(repeating: "X", count: 100_000) + #""}"#
        try client.send("list\n\(unknown)\nlist\nlist\nping\n")
        #expect(try client.readReply().parameters["count"] == 0)
        #expect(try client.readReply().error == .methodNotFound)
        #expect(try client.readReply().parameters["count"] == 0)
        #expect(try client.readReply().parameters["count"] == 0)
        #expect(try client.readReply().parameters == [:])
        #expect(try daemon.client().callOne("ping").error == nil)

        // The same with a large value read at once between two tasks, and the client's side
        // closed after the last request: each reply in its place, none lost (hostile32 F2).
        let setup = try daemon.client()
        #expect(try setup.callOne("switch alice").error == nil)
        #expect(try setup.callOne("set memory big \"" + String(repeating: "x", count: 100_000) + "\"").error == nil)
        let pipelined = try daemon.client()
        try pipelined.send("status alice\nget memory big\nstatus bob\nping\n")
        pipelined.finishSending()
        let alice = try pipelined.readReply()
        #expect(alice.parameters["account"] == "alice", "\(alice)")
        #expect(try pipelined.readReply().parameters["value"]?.stringValue?.count == 100_000)
        let bob = try pipelined.readReply()
        #expect(bob.parameters["account"] == "bob", "\(bob)")
        #expect(try pipelined.readReply().parameters == [:])
        #expect(try pipelined.readLine() == nil)
    }

    /// Clients that send many requests for a large value and never read: the daemon writes
    /// each turn's replies once they pass 64 KiB, and answers nothing more while the client
    /// does not read them, so it holds about one reply per connection, not the 32 of a
    /// turn (hostile32 F3: 24 such connections took it from 40 MB to 914 MB).
    @Test func clientsThatDoNotReadLargeRepliesHoldLittleMemory() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let setup = try daemon.client()
        #expect(try setup.callOne("set memory big \"" + String(repeating: "x", count: 1_000_000) + "\"").error == nil)
        let before = try #require(Hostile.rssKiB(daemon.process.processIdentifier))
        let silent = try (0..<8).map { _ in try daemon.client() }
        for client in silent { try client.send(String(repeating: "get memory big\n", count: 64)) }
        // A request behind theirs on another connection: once it is answered, the daemon has
        // had its turns at theirs.
        Thread.sleep(forTimeInterval: 2)
        #expect(try daemon.client().callOne("ping").error == nil)
        let grown = try #require(Hostile.rssKiB(daemon.process.processIdentifier)) - before
        #expect(grown < 64 * 1024, "the daemon grew by \(grown / 1024) MiB for 8 connections that do not read")
        withExtendedLifetime(silent) {}
    }

    /// `Keys` of a namespace of over 4,096 keys is sorted and encoded on the pool, not the
    /// event loop (a million took the loop 240 ms: hostile32 F4), and its reply still comes
    /// whole and in its place among the pipelined requests around it.
    @Test func keysOfALargeNamespaceComeWholeAndInOrder() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let client = try daemon.client()
        let count = 5_000
        try client.send((0..<count).map { "set memory k\($0) 1\n" }.joined())
        for _ in 0..<count { #expect(try client.readReply().error == nil) }
        try client.send("ping\nkeys memory\nset memory z 2\nkeys memory\nping\n")
        #expect(try client.readReply().parameters == [:])
        let keys = try client.readReply().parameters["keys"]?.arrayValue?.compactMap(\.stringValue)
        #expect(keys == (0..<count).map { "k\($0)" }.sorted())
        #expect(try client.readReply().error == nil)
        #expect(try client.readReply().parameters["keys"]?.arrayValue?.last == "z")
        #expect(try client.readReply().parameters == [:])
    }

    @Test func aLastRequestWithoutNewlineIsAnsweredBeforeTheConnectionCloses() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        // Needs a task (it creates and migrates the account), then the connection closes.
        let first = try daemon.client()
        try first.send("ping\nswitch carol")
        first.finishSending()
        #expect(try first.readReply().parameters == [:])
        let switched = try first.readReply()
        #expect(switched.parameters["account"] == "carol" && switched.parameters["action"] == "created", "\(switched)")
        #expect(try first.readLine() == nil)

        // Answered at once, then the connection closes.
        let second = try daemon.client()
        try second.send("status")
        second.finishSending()
        #expect(try second.readReply().parameters["active"] == "carol")
        #expect(try second.readLine() == nil)
    }

    @Test func aClientThatLeavesMidRequestDoesNotDisturbOthers() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        for _ in 0..<20 {
            let leaving = try daemon.client()
            try leaving.send("switch dave\nset user a 1\nget user a\nstatus dave\n")
            // Closed without reading: the replies have nowhere to go, and what was
            // pipelined behind the request that failed to answer may not run.
        }
        let client = try daemon.client()
        let get = try client.callOne("get user a dave")
        #expect(get.parameters["value"] == 1 || get.error == .keyNotFound, "\(get)")
        #expect(try client.callOne("status").parameters["active"] == "dave")
        #expect(try client.callOne("verify dave").parameters["healthy"] == true)
    }

    /// SIGTERM while a Set waits for its commit (another process holds `device.sqlite`'s
    /// write lock): the client sends a ping and begins another request after shutdown began.
    /// The Set is answered, then each of the two gets `ShuttingDown`, then the connection
    /// closes and the daemon exits 0.
    @Test func requestsSentDuringShutdownBehindARunningOneGetShuttingDownAfterIt() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        // Returns once the daemon has read the Set, so it is in progress at SIGTERM; a Set still
        // unread then would find the connection idle and be closed unanswered, as the protocol allows.
        let (client, release) = try Hostile.clientWithASetWaitingForItsCommit(daemon, key: "beta", value: "2")

        let signalled = ContinuousClock.now
        kill(daemon.process.processIdentifier, SIGTERM)
        let stoppedAccepting = waitUntil(timeout: 20) { (try? RawClient(socket: daemon.socket)) == nil }
        #expect(stoppedAccepting, "the daemon still accepted connections 20 s after SIGTERM")
        let sent = (try? client.send("ping\n" + "pi")) != nil
        let late = ContinuousClock.now - signalled
        release()

        let (closed, lines) = client.readUntilClosed(timeout: 20)
        let replies = try lines.map { try Reply.decode(Array($0.utf8)).error }
        #expect(closed, "the connection was not closed after its ShuttingDown replies")
        #expect(E2E.stop(daemon, signal: 0, timeout: 30) == 0)
        if late < .seconds(8) {
            #expect(sent, "the connection was closed before the client's next requests; the daemon's log:\n\(daemon.log)")
            #expect(replies == [nil, .shuttingDown, .shuttingDown], "\(lines); the daemon's log:\n\(daemon.log)")
        } else {
            // So loaded a machine that the closing grace (10 s) may have run out before the
            // client's next requests: then the running Set is answered ShuttingDown and the
            // connection closed, as the grace promises.
            #expect(
                replies == [nil, .shuttingDown, .shuttingDown] || replies == [.shuttingDown],
                "\(lines) (\(late) after SIGTERM); the daemon's log:\n\(daemon.log)")
        }
        guard replies.first == .some(nil) else { return }
        // The Set that was answered is kept.
        try E2E.spawning { try daemon.restart() }
        #expect(try daemon.client().callOne("get switch beta").parameters["value"] == 2)
    }
}
