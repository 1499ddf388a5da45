import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A streamed reply whose client reads nothing is ended after `limits.streamStallSeconds`,
/// and what it held goes with it (hostile31 F15, F16): a `Query`'s snapshot, which otherwise
/// keeps SQLite from checkpointing the WAL past it, and an `Export sqlite`'s staged copy,
/// of which one uid may have at most `limits.stagedExportsPerUid` at once.
@Suite struct StreamStallTests {
    /// 200,000 rows of about 110 bytes in alice's `app_data`: far more than a socket holds.
    static func daemonWithManyRows(_ dir: borrowing TestDirectory, _ environment: [String: String]) throws -> DaemonProcess {
        var environment = environment
        environment["ACCOUNTD_LIMITS_QUERY_TIMEOUT_MS"] = "60000"
        let daemon = try DataCalls.daemonWithAlice(dir, environment: environment)
        let insert =
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) INSERT INTO app_data(key, value) SELECT i, printf('%0100d', i) FROM n"
        let inserted = try daemon.client().callOne(DataCalls.execute("alice", [(insert, [])]))
        try #require(inserted.error == nil, "\(inserted.parameters)")
        return daemon
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)` from another process: whether it checkpointed the
    /// whole WAL (no reader holds an older snapshot), and the WAL's size after it.
    static func truncateWAL(_ path: String) throws -> (complete: Bool, walBytes: Int) {
        let out = try E2E.sqlite3(path, "PRAGMA wal_checkpoint(TRUNCATE);").trimmingCharacters(in: .whitespacesAndNewlines)
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "-wal")
        return (out.hasPrefix("0|"), (attributes?[.size] as? Int) ?? 0)
    }

    @Test func aSilentQueryReaderIsEndedAndTheWALCanBeCheckpointedAgain() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemonWithManyRows(dir, ["ACCOUNTD_LIMITS_STREAM_STALL_SECONDS": "2"])
        let path = daemon.accountPath("alice")
        let writer = try daemon.client()

        // A reader that asks for every row and reads nothing.
        let reader = try daemon.client()
        try reader.send(DataCalls.query("alice", "SELECT key, value FROM app_data", more: true) + "\n")
        Thread.sleep(forTimeInterval: 0.5)
        let asked = Date()
        // Writes go on meanwhile, and are answered at once.
        let update = try writer.callOne(DataCalls.execute("alice", [("UPDATE app_data SET value = value || 'x' WHERE rowid <= 50000", [])]))
        #expect(update.error == nil, "\(update.parameters)")
        // While the reader holds its snapshot, the WAL cannot be checkpointed past it.
        #expect(try Self.truncateWAL(path).complete == false, "the silent reader's snapshot holds the WAL")

        // Once the stall bound has passed, the snapshot is gone: the WAL checkpoints whole and is truncated.
        let released = waitUntil(timeout: 10, interval: 0.2) { (try? Self.truncateWAL(path).complete) == true }
        #expect(released, "the WAL could still not be checkpointed \(Date().timeIntervalSince(asked)) s after the reader stalled")
        #expect(Date().timeIntervalSince(asked) >= 1.0, "released only after the stall bound")
        #expect(try Self.truncateWAL(path).walBytes == 0)

        // The reader, reading at last, gets what was already sent, then the reason it ended.
        var last = try reader.readReply()
        while last.continues { last = try reader.readReply() }
        #expect(last.error == .queryTimeout, "\(last.parameters)")
        #expect(last.parameters["message"]?.stringValue?.contains("limits.streamStallSeconds") == true, "\(last.parameters)")
        #expect(last.parameters["timeoutMs"] == 2000)
        // Its connection serves the next request, and the account has every row.
        #expect(try reader.callOne(DataCalls.query("alice", "SELECT count(*) FROM app_data")).parameters["rows"] == [[200000]])
    }

    /// The stall bound measures progress, not whole pieces (issue 32): a client that takes
    /// 8 KiB every 200 ms (40 KiB/s, so a 256 KiB piece takes about 6 s to drain, twice the
    /// 3 s bound) reads a Query of about 700 KiB to its end. It used to be cut off with
    /// `QueryTimeout` once the socket was full, since no piece was wholly written within the bound.
    @Test func aSlowButSteadyQueryReaderGetsEveryRow() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir, environment: ["ACCOUNTD_LIMITS_STREAM_STALL_SECONDS": "3"])
        let insert =
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6000) INSERT INTO app_data(key, value) SELECT i, printf('%0100d', i) FROM n"
        let inserted = try daemon.client().callOne(DataCalls.execute("alice", [(insert, [])]))
        try #require(inserted.error == nil, "\(inserted.parameters)")

        let reader = try daemon.client()
        try reader.send(DataCalls.query("alice", "SELECT key, value FROM app_data", more: true) + "\n")
        let replies = try Self.readSlowly(reader, bytes: 8192, every: 0.2)
        let rows = replies.reduce(0) { $0 + ($1.parameters["rows"]?.arrayValue?.count ?? 0) }
        let last = try #require(replies.last)
        #expect(last.error == nil, "the slow reader was cut off after \(rows) rows: \(last.parameters)")
        #expect(rows == 6000)
        #expect(last.parameters["rowCount"] == 6000, "\(last.parameters)")
    }

    /// Reads `client`'s replies `bytes` at a time, one read every `every` seconds, up to the
    /// last (the first without `continues`), or until the daemon closes the connection.
    static func readSlowly(_ client: RawClient, bytes: Int, every: TimeInterval) throws -> [Reply] {
        var framer = LineFramer(maximumLineLength: 1 << 26)
        var replies: [Reply] = []
        var buffer = [UInt8](repeating: 0, count: bytes)
        while replies.last.map({ $0.continues }) ?? true {
            Thread.sleep(forTimeInterval: every)
            let count = recv(client.fd, &buffer, bytes, 0)
            guard count > 0 else { break }  // closed: the caller finds no last reply
            framer.append(buffer[0..<count])
            while let line = try framer.nextLine() { replies.append(try Reply.decode(Array(line))) }
        }
        return replies
    }

    @Test func aSilentSqliteExportIsEndedAndItsStagedCopyRemovedAndCopiesAreBoundedPerUid() throws {
        let dir = TestDirectory()
        let daemon = try Self.daemonWithManyRows(
            dir, ["ACCOUNTD_LIMITS_STREAM_STALL_SECONDS": "2", "ACCOUNTD_LIMITS_STAGED_EXPORTS_PER_UID": "1"])
        let staging = daemon.dataRoot + "/tmp"
        func staged() -> [String] { Hostile.listing(staging).filter { $0.hasPrefix("export-alice-") } }

        let reader = try daemon.client()
        try reader.send(DataCalls.line("Export", [("account", "alice"), ("format", "sqlite")], more: true) + "\n")
        #expect(waitUntil(timeout: 5) { staged().count == 1 }, "the export staged its copy: \(staged())")

        // A second sqlite export of the same uid is refused while the first holds its copy.
        let second = try daemon.client().callOne(DataCalls.line("Export", [("account", "alice"), ("format", "sqlite")], more: true))
        #expect(second.error == .accountBusy, "\(second.parameters)")
        #expect(second.parameters["message"]?.stringValue?.contains("limits.stagedExportsPerUid") == true, "\(second.parameters)")
        #expect(staged().count == 1)

        // The silent export is ended after the stall bound, and its copy removed.
        #expect(waitUntil(timeout: 10) { staged().isEmpty }, "the staged copy stayed: \(staged())")
        var last = try reader.readReply()
        while last.continues { last = try reader.readReply() }
        #expect(last.error == .queryTimeout, "\(last.parameters)")

        // Then an export that is read runs to its end, and leaves nothing staged.
        let out = dir.sub("alice.sqlite")
        let exported = try E2E.accountctl(["export", "alice", "--format", "sqlite", "--output", out], socket: daemon.socket)
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(try E2E.sqlite3(out, "SELECT count(*) FROM app_data;").trimmingCharacters(in: .whitespacesAndNewlines) == "200000")
        #expect(staged().isEmpty)
    }
}
