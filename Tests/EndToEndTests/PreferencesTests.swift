import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Synchronization
import Testing

/// Key-value namespaces against the real daemon: scopes, exact values, durability.
@Suite struct PreferencesTests {
    func set(_ client: RawClient, _ namespace: String, _ key: String, _ value: JSONValue, account: String? = nil) throws -> Reply {
        var parameters: [(String, JSONValue)] = [("namespace", .string(namespace)), ("key", .string(key)), ("value", value)]
        if let account { parameters.append(("account", .string(account))) }
        return try client.callOne(Request(method: .set, parameters: Parameters(parameters)).encoded())
    }

    func get(_ client: RawClient, _ namespace: String, _ key: String, account: String? = nil) throws -> Reply {
        var parameters: [(String, JSONValue)] = [("namespace", .string(namespace)), ("key", .string(key))]
        if let account { parameters.append(("account", .string(account))) }
        return try client.callOne(Request(method: .get, parameters: Parameters(parameters)).encoded())
    }

    @Test func scopesKeepTheirValuesWhereTheyBelong() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try set(client, "user", "tip.hidden", true).error == nil)
        #expect(try set(client, "switch", "beta", "on").error == nil)
        #expect(try set(client, "memory", "secret", "only-in-ram-9f3a").error == nil)

        // device values survive a switch; account values follow the account.
        #expect(try client.callOne("switch bob").error == nil)
        #expect(try get(client, "switch", "beta").parameters["value"] == "on")
        #expect(try get(client, "user", "tip.hidden").error == .keyNotFound)
        #expect(try get(client, "user", "tip.hidden", account: "alice").parameters["value"] == true)

        // account values live in the account's file and appear in its export.
        let rows = try DatabaseQueue(path: daemon.accountPath("alice")).read {
            try Row.fetchAll($0, sql: "SELECT namespace, key, value FROM accountd_prefs")
        }
        #expect(rows.map { "\($0["namespace"] as String)/\($0["key"] as String)=\($0["value"] as String)" } == ["user/tip.hidden=true"])
        let export = try client.call(#"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"jsonl"},"more":true}"#)
        #expect(export.contains { $0.parameters["table"] == "accountd_prefs" && $0.parameters["row"]?["key"] == "tip.hidden" })
        let device = try DatabaseQueue(path: daemon.dataRoot + "/device.sqlite").read {
            try String.fetchAll($0, sql: "SELECT key FROM prefs")
        }
        #expect(device == ["beta"])

        // memory values never touch disk, and are gone after a restart.
        #expect(try get(client, "memory", "secret").parameters["value"] == "only-in-ram-9f3a")
        daemon.stop()
        let onDisk = try FileManager.default.subpathsOfDirectory(atPath: daemon.dataRoot).compactMap { path -> Data? in
            FileManager.default.contents(atPath: daemon.dataRoot + "/" + path)
        }
        #expect(!onDisk.contains { $0.range(of: Data("only-in-ram-9f3a".utf8)) != nil })
        try daemon.restart()
        let again = try daemon.client()
        #expect(try get(again, "memory", "secret").error == .keyNotFound)
        #expect(try get(again, "switch", "beta").parameters["value"] == "on")
        #expect(try get(again, "user", "tip.hidden", account: "alice").parameters["value"] == true)
    }

    static let values: [JSONValue] = [
        .int(Int64.max), .int(Int64.min), .int(0), .double(0.1), .double(-1e300), .double(1.0), .double(.leastNonzeroMagnitude),
        "unicode: héllo 世界 🎉 \u{1F468}\u{200D}\u{1F469}", "quotes \" and \\ and \n newlines \t tabs \u{0001}", "", .null, true,
        ["nested": ["deep": [1, 2.5, "three", nil, ["four": false]]], "empty": [:], "list": []],
    ]

    @Test func valuesRoundTripExactly() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        for namespace in ["user", "switch", "memory"] {
            for (index, value) in Self.values.enumerated() {
                #expect(try set(client, namespace, "v\(index)", value).error == nil)
            }
        }
        // Large values, up to the request limit (1 MiB by default).
        let large = JSONValue.string(String(repeating: "x", count: (1 << 20) - 200))
        #expect(try set(client, "user", "large", large).error == nil)
        let tooLarge = JSONValue.string(String(repeating: "y", count: 1 << 20))
        #expect(try set(client, "user", "huge", tooLarge).error == .requestTooLarge)

        try daemon.restart()
        let again = try daemon.client()
        for namespace in ["user", "switch"] {
            for (index, value) in Self.values.enumerated() {
                let reply = try get(again, namespace, "v\(index)", account: namespace == "user" ? "alice" : nil)
                #expect(reply.parameters["value"] == value, "\(namespace)/v\(index)")
                // Not just equal: the same JSON text (1.0 stays 1.0, integers stay integers).
                #expect(reply.parameters["value"]?.serialized() == value.serialized())
            }
        }
        #expect(try get(again, "user", "large", account: "alice").parameters["value"] == large)
    }

    @Test func nonActiveAccountsCanBeReadAndWritten() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne("switch bob").error == nil)
        #expect(try set(client, "user", "lang", "fr", account: "alice").error == nil)
        #expect(try set(client, "user", "lang", "de").error == nil)
        #expect(try get(client, "user", "lang", account: "alice").parameters["value"] == "fr")
        #expect(try get(client, "user", "lang").parameters["value"] == "de")
        #expect(try client.callOne(#"{"method":"io.accountd.Status"}"#).parameters["active"] == "bob")
        #expect(try set(client, "user", "lang", "x", account: "nobody").error == .accountNotFound)
        #expect(try set(client, "user", "lang", "x", account: "../evil").error == .invalidAccountName)
    }

    @Test func everyAcknowledgedSetSurvivesKill9() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let setup = try daemon.client()
        #expect(try setup.callOne("switch alice").error == nil)

        final class Shared: Sendable {
            let acknowledged = Mutex<[(namespace: String, key: String, value: Int)]>([])
            let stop = Atomic<Bool>(false)
        }
        let shared = Shared()
        let socket = daemon.socket
        let done = DispatchGroup()
        for writer in 0..<32 {
            done.enter()
            DispatchQueue.global().async {
                defer { done.leave() }
                guard let client = try? RawClient(socket: socket) else { return }
                var n = 0
                while !shared.stop.load(ordering: .relaxed) {
                    let namespace = writer % 2 == 0 ? "user" : "switch"
                    let key = "w\(writer)-\(n)"
                    let request = Request(
                        method: .set, parameters: Parameters([("namespace", .string(namespace)), ("key", .string(key)), ("value", .int(Int64(n)))]))
                    guard let reply = try? client.callOne(request.encoded()) else { return }
                    if reply.error == nil { shared.acknowledged.withLock { $0.append((namespace, key, n)) } }
                    n += 1
                }
            }
        }
        // Kill once plenty of writes are in flight: after 200 acknowledgements (or 15 s on a busy machine).
        _ = waitUntil(timeout: 15) { shared.acknowledged.withLock { $0.count } >= 200 }
        daemon.stop(signal: SIGKILL)
        shared.stop.store(true, ordering: .relaxed)
        done.wait()

        let written = shared.acknowledged.withLock { $0 }
        #expect(written.count >= 200, "only \(written.count) Sets were acknowledged")
        try daemon.restart()
        let client = try daemon.client()
        var missing: [String] = []
        for entry in written {
            let reply = try get(client, entry.namespace, entry.key, account: entry.namespace == "user" ? "alice" : nil)
            if reply.parameters["value"] != .int(Int64(entry.value)) { missing.append("\(entry.namespace)/\(entry.key)") }
        }
        #expect(missing.isEmpty, "\(missing.count) of \(written.count) acknowledged Sets were lost: \(missing.prefix(5))")
        let integrity = try DatabaseQueue(path: daemon.accountPath("alice")).read { try String.fetchAll($0, sql: "PRAGMA integrity_check") }
        #expect(integrity == ["ok"])
    }

    /// Power loss cannot be produced in a test, but its precondition can be observed: with
    /// `strace` on the daemon, every Set must be followed by a sync of the WAL it was
    /// written to before its reply comes back. (With `synchronous = NORMAL`, which GRDB
    /// picks for WAL connections unless told otherwise, a commit syncs nothing.)
    @Test func everySetIsSyncedToDiskBeforeItIsAcknowledged() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        // Open both tables before tracing starts.
        #expect(try set(client, "user", "warm", 0).error == nil)
        #expect(try set(client, "switch", "warm", 0).error == nil)

        let tracePath = dir.path + "/strace.out"
        let strace = Process()
        strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        strace.arguments = ["-f", "-y", "-e", "trace=fsync,fdatasync", "-o", tracePath, "-p", "\(daemon.process.processIdentifier)"]
        let messages = dir.path + "/strace.err"
        FileManager.default.createFile(atPath: messages, contents: nil)
        strace.standardError = FileHandle(forWritingAtPath: messages)
        try strace.run()
        // Tracing has begun once strace is the tracer of every thread of the daemon.
        let attached = waitUntil(timeout: 20) { Self.everyThread(of: daemon.process.processIdentifier, isTracedBy: strace.processIdentifier) }
        try #require(attached, "strace did not attach to every thread of accountd: \((try? String(contentsOfFile: messages, encoding: .utf8)) ?? "")")

        // One at a time: each Set is its own transaction, acknowledged before the next is sent.
        let count = 10
        for n in 1...count {
            #expect(try set(client, "user", "k", .int(Int64(n))).error == nil)
            #expect(try set(client, "switch", "k", .int(Int64(n))).error == nil)
        }
        // strace ends when the daemon does (signals to strace itself may arrive blocked, inherited from the test runner).
        #expect(daemon.stop() == 0)
        strace.waitUntilExit()

        let trace = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n")
        let accountSyncs = trace.filter { $0.contains("sync(") && $0.contains("/alice.sqlite-wal>") }.count
        let deviceSyncs = trace.filter { $0.contains("sync(") && $0.contains("/device.sqlite-wal>") }.count
        print("PreferencesTests sync: \(count) Sets each: alice.sqlite-wal synced \(accountSyncs) times, device.sqlite-wal \(deviceSyncs) times")
        #expect(accountSyncs >= count, "\(trace.suffix(5))")
        #expect(deviceSyncs >= count, "\(trace.suffix(5))")
    }

    /// Whether every thread of process `pid` has process `tracer` as its tracer (`TracerPid`
    /// in the thread's status).
    static func everyThread(of pid: Int32, isTracedBy tracer: Int32) -> Bool {
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !threads.isEmpty else { return false }
        return threads.allSatisfy { thread in
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8) else { return false }
            return status.split(separator: "\n").contains("TracerPid:\t\(tracer)")
        }
    }
}
