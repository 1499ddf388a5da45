import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A warm point read (`DataService.queryAtOnce`) looks at the account's file by path on
/// every request, but at the handoff record and the folders only when something may have
/// changed them (an inotify event on the data root's names, a hold, a handoff): and then a
/// folder swapped for a link or a handoff record made behind the daemon's back is still
/// refused at the next read, as when every read looked at them.
@Suite struct DataAtOnceChecksTests {
    static let point = DataAtOnceTests.point

    /// Warm reads of alice, after which the statement is compiled and its connection idle.
    static func warm(_ client: RawClient, reads: Int = 20) throws {
        for round in 0..<reads {
            let read = try client.callOne(DataCalls.query("alice", point, [JSONValue(round % 2 + 1)]))
            try #require(read.parameters["rows"] == [[JSONValue.string(round % 2 == 0 ? "ann" : "ben")]], "\(read.parameters)")
        }
    }

    @Test func aWarmReadLooksByPathAtTheFileAloneNotAtTheFolders() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        try Self.warm(client)

        let tracePath = dir.path + "/strace.out"
        let strace = Process()
        strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        strace.arguments = ["-f", "-e", "trace=newfstatat,lstat,stat,statx", "-o", tracePath, "-p", "\(daemon.process.processIdentifier)"]
        let messages = dir.path + "/strace.err"
        _ = FileManager.default.createFile(atPath: messages, contents: nil)
        strace.standardError = FileHandle(forWritingAtPath: messages)
        try strace.run()
        let attached = waitUntil(timeout: 20) { PreferencesTests.everyThread(of: daemon.process.processIdentifier, isTracedBy: strace.processIdentifier) }
        try #require(attached, "strace did not attach to every thread of accountd: \((try? String(contentsOfFile: messages, encoding: .utf8)) ?? "")")

        let reads = 200
        try Self.warm(client, reads: reads)
        #expect(daemon.stop() == 0)
        strace.waitUntilExit()

        let trace = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n")
        let calls = trace.filter { $0.contains("stat") && $0.contains("(") }
        let folders = calls.filter { $0.contains("\"snapshots") || $0.contains("\"moved") || $0.contains("\"accounts\"") }
        print("DataAtOnceChecksTests: \(reads) warm reads made \(calls.count) stat calls, \(folders.count) of the folders or handoff record")
        // Before: six per read (the handoff record, three folders, the file's identity); now one.
        #expect(calls.count < reads * 3 / 2, "\(calls.suffix(8))")
        #expect(folders.count < reads / 10, "\(folders.suffix(8))")
    }

    @Test func foldersSwappedAndAHandoffRecordMadeBehindTheDaemonAreRefusedAtTheNextWarmRead() throws {
        let dir = TestDirectory()
        let daemon = try DataCalls.daemonWithAlice(dir)
        let client = try daemon.client()
        let files = FileManager.default
        let root = daemon.dataRoot

        // accounts/ moved aside and a link put in its place: the same file is reached through
        // it, so only the folder check tells.
        try Self.warm(client)
        try files.moveItem(atPath: root + "/accounts", toPath: root + "/accounts.real")
        try files.createSymbolicLink(atPath: root + "/accounts", withDestinationPath: root + "/accounts.real")
        let throughLink = try client.callOne(DataCalls.query("alice", Self.point, [1]))
        #expect(throughLink.error == .accountCorrupt, "\(throughLink.parameters)")
        try files.removeItem(atPath: root + "/accounts")
        try files.moveItem(atPath: root + "/accounts.real", toPath: root + "/accounts")
        try Self.warm(client)

        // snapshots/ (which a read never uses) a link to a folder outside the data root.
        let outside = dir.path + "/elsewhere"
        try files.createDirectory(atPath: outside, withIntermediateDirectories: true)
        if files.fileExists(atPath: root + "/snapshots") { try files.moveItem(atPath: root + "/snapshots", toPath: root + "/snapshots.real") }
        try files.createSymbolicLink(atPath: root + "/snapshots", withDestinationPath: outside)
        let linkedSnapshots = try client.callOne(DataCalls.query("alice", Self.point, [1]))
        #expect(linkedSnapshots.error == .accountCorrupt, "\(linkedSnapshots.parameters)")
        try files.removeItem(atPath: root + "/snapshots")
        if files.fileExists(atPath: root + "/snapshots.real") { try files.moveItem(atPath: root + "/snapshots.real", toPath: root + "/snapshots") }
        try Self.warm(client)

        // A handoff record put in place by hand.
        try files.createDirectory(atPath: root + "/moved", withIntermediateDirectories: true)
        try Data("{\"account\":\"alice\",\"handedOffAt\":\"2026-11-26T16:00:00Z\",\"replica\":\"file:///elsewhere\"}\n".utf8)
            .write(to: URL(fileURLWithPath: root + "/moved/alice"))
        let moved = try client.callOne(DataCalls.query("alice", Self.point, [1]))
        #expect(moved.error == .accountMoved, "\(moved.parameters)")
        try files.removeItem(atPath: root + "/moved/alice")
        try Self.warm(client)
    }
}
