import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `Watch` against the real daemon: the documented keys of `changed` and `migration`
/// events, and a lagging watcher told how many events it missed.
@Suite struct WatchTests {
    /// A connection watching events, returned once its subscription is in place: a request
    /// sent behind `watch` is refused only after the watch has started.
    static func watcher(_ daemon: DaemonProcess) throws -> RawClient {
        let watcher = try daemon.client()
        try watcher.send("watch\nping\n")
        let refusal = try watcher.readReply()
        try #require(refusal.error == .invalidRequest, "the request behind watch: \(refusal)")
        return watcher
    }

    /// The parameters of the next reply, which must be a streamed event.
    static func nextEvent(_ watcher: RawClient, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: JSONValue] {
        let reply = try watcher.readReply()
        #expect(reply.continues, "an event without continues: \(reply)", sourceLocation: sourceLocation)
        return Dictionary(uniqueKeysWithValues: reply.parameters.objectValue ?? [])
    }

    @Test func changedEventsCarryTheDocumentedKeysInEveryScope() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        let watcher = try Self.watcher(daemon)

        // namespace, scope, and the account (account scope only).
        let cases: [(namespace: String, scope: String, account: String?)] = [
            ("user", "account", "alice"), ("switch", "device", nil), ("memory", "memory", nil),
        ]
        for (namespace, scope, account) in cases {
            #expect(try client.callOne(#"set \#(namespace) colour {"r":1,"g":[2,3]}"#).error == nil)
            #expect(try client.callOne("delete \(namespace) colour").error == nil)
            // A Delete of a missing key changes nothing and publishes nothing.
            #expect(try client.callOne("delete \(namespace) colour").error == .keyNotFound)

            var keys: Set<String> = ["event", "namespace", "key", "scope", "value", "deleted"]
            if account != nil { keys.insert("account") }
            let set = try Self.nextEvent(watcher)
            #expect(Set(set.keys) == keys, "\(namespace) set: \(set)")
            #expect(set["event"] == "changed")
            #expect(set["namespace"] == .string(namespace))
            #expect(set["key"] == "colour")
            #expect(set["scope"] == .string(scope))
            #expect(set["account"] == account.map { .string($0) })
            #expect(set["value"] == ["r": 1, "g": [2, 3]])
            #expect(set["deleted"] == false)

            let deleted = try Self.nextEvent(watcher)
            #expect(Set(deleted.keys) == keys, "\(namespace) delete: \(deleted)")
            #expect(deleted["event"] == "changed")
            #expect(deleted["namespace"] == .string(namespace))
            #expect(deleted["key"] == "colour")
            #expect(deleted["scope"] == .string(scope))
            #expect(deleted["account"] == account.map { .string($0) })
            #expect(deleted["value"] == .null)
            #expect(deleted["deleted"] == true)
        }
        // A per-account change to another account than the active one names that account.
        #expect(try client.callOne("switch bob").error == nil)
        #expect(try Self.nextEvent(watcher)["event"] == "switched")
        #expect(try client.callOne(#"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"k","value":1,"account":"alice"}}"#).error == nil)
        #expect(try Self.nextEvent(watcher)["account"] == "alice")
    }

    @Test func aMigrationOverSeveralStepsIsOneEventPerStep() throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        try E2E.createOffline("alice", dataRoot: dataRoot, bundle: try BundleFixture.truncate(Repository.sampleBundle, at: 1, into: dir.sub("v1")))
        let daemon = try E2E.daemon(directory: dir.path)
        let watcher = try Self.watcher(daemon)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").parameters["action"] == "migrated")

        let names = try FileManager.default.contentsOfDirectory(atPath: Repository.sampleBundle + "/migrations").sorted()
            .map { String($0.dropLast(".sql".count)) }
        for (index, version) in [2, 3].enumerated() {
            let event = try Self.nextEvent(watcher)
            #expect(Set(event.keys) == ["event", "account", "step", "of", "name", "version"], "\(event)")
            #expect(event["event"] == "migration")
            #expect(event["account"] == "alice")
            #expect(event["step"] == JSONValue(index + 1))
            #expect(event["of"] == 2)
            #expect(event["name"] == .string(names[version - 1]))
            #expect(event["version"] == JSONValue(version))
        }
        let switched = try Self.nextEvent(watcher)
        #expect(Set(switched.keys) == ["event", "account", "previous", "action", "version"], "\(switched)")
        #expect(switched["event"] == "switched")
        #expect(switched["action"] == "migrated")
        #expect(switched["version"] == 3)
        #expect(switched["previous"] == .null)
    }

    /// A watcher that reads nothing while 30,000 events are published: more than its
    /// buffer (10,000 events) and the socket's can hold. When it reads, it gets the first
    /// events (those that fitted in the socket), then one `missed` with how many were
    /// dropped, then the newest ones, in order; received plus missed is every event.
    @Test func aLaggingWatcherIsToldHowManyEventsItMissed() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let watcher = try Self.watcher(daemon)
        let publisher = try daemon.client()
        let published = 30_000
        let chunk = 1_000
        for first in stride(from: 0, to: published, by: chunk) {
            try publisher.send((first..<first + chunk).map { "set memory n \($0)\n" }.joined())
            for _ in 0..<chunk {
                let reply = try publisher.readReply()
                try #require(reply.error == nil, "\(reply)")
            }
        }

        // Every Set was answered, so every event was published: read them all (each one is
        // there to read by now, so a wait of seconds means one never comes).
        watcher.setReceiveTimeout(10)
        var received: [Int] = []
        var missed: [(at: Int, count: Int)] = []
        while received.count + missed.reduce(0, { $0 + $1.count }) < published {
            let event = try Self.nextEvent(watcher)
            switch event["event"] {
            case "missed":
                #expect(Set(event.keys) == ["event", "count"], "\(event)")
                guard case .int(let count) = event["count"] else {
                    Issue.record("missed without a count: \(event)")
                    return
                }
                missed.append((received.count, Int(count)))
            case "changed":
                guard case .int(let value) = event["value"] else {
                    Issue.record("unexpected event \(event)")
                    return
                }
                received.append(Int(value))
            default:
                Issue.record("unexpected event \(event)")
                return
            }
        }
        let dropped = missed.reduce(0) { $0 + $1.count }
        print("WatchTests lag: \(published) published, \(received.count) received, \(dropped) reported missed in \(missed.count) report(s)")
        #expect(received.count + dropped == published)
        try #require(missed.count == 1, "missed reports: \(missed)")
        // Before the report: the oldest events, in order; after it: the newest, in order,
        // exactly where the dropped run ends.
        let at = missed[0].at
        #expect(received[..<at].elementsEqual(0..<at))
        #expect(received[at...].elementsEqual((at + dropped)..<published))
        #expect(published - (at + dropped) == 10_000, "the events kept for a lagging watcher")

        // Caught up: the next event comes at once, with no report before it.
        #expect(try publisher.callOne("set memory n -1").error == nil)
        #expect(try Self.nextEvent(watcher)["value"] == -1)
    }

    /// A watcher that never reads while 400 Sets of 256 KiB values are published (100 MiB of
    /// events): what waits for it is bounded in bytes (8 MiB), not only in events, so the
    /// daemon's memory stays flat. When it reads, it gets the events that fitted in the socket,
    /// one `missed` with how many were dropped, then the newest ones, in order: received
    /// plus missed is every event.
    @Test func aSilentWatcherOfLargeValuesHoldsBoundedMemory() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let publisher = try daemon.client()
        let pad = String(repeating: "x", count: 256 * 1024)
        func set(_ index: Int) throws {
            let reply = try publisher.callOne(#"set memory big "\#(index) \#(pad)""#)
            try #require(reply.error == nil, "\(reply.parameters)")
        }
        // Warm up without a watcher, so that the baseline holds the allocator's working set.
        for index in 0..<40 { try set(-1 - index) }
        let pid = daemon.process.processIdentifier
        let before = try #require(Hostile.rssKiB(pid))

        let watcher = try Self.watcher(daemon)
        let published = 400
        for index in 0..<published { try set(index) }
        let after = try #require(Hostile.rssKiB(pid))
        let growthMiB = Double(after - before) / 1024
        print("WatchTests large values: RSS \(before / 1024) MiB before, \(after / 1024) MiB after \(published) Sets of 256 KiB with a silent watcher")
        #expect(growthMiB < 40, "the daemon grew by \(growthMiB) MiB for one watcher that does not read")

        watcher.setReceiveTimeout(10)
        var received: [Int] = []
        var missed: [(at: Int, count: Int)] = []
        while received.count + missed.reduce(0, { $0 + $1.count }) < published {
            let event = try Self.nextEvent(watcher)
            switch event["event"] {
            case "missed":
                guard case .int(let count) = event["count"] else {
                    Issue.record("missed without a count: \(event)")
                    return
                }
                missed.append((received.count, Int(count)))
            case "changed":
                guard case .string(let text) = event["value"], let index = Int(text.prefix { $0 != " " }) else {
                    Issue.record("unexpected event \(String(describing: event).prefix(200))")
                    return
                }
                #expect(text.utf8.count == pad.utf8.count + String(index).utf8.count + 1)
                received.append(index)
            default:
                Issue.record("unexpected event \(event)")
                return
            }
        }
        let dropped = missed.reduce(0) { $0 + $1.count }
        print("WatchTests large values: \(received.count) received, \(dropped) reported missed")
        #expect(received.count + dropped == published)
        try #require(missed.count == 1, "missed reports: \(missed)")
        let at = missed[0].at
        #expect(received[..<at].elementsEqual(0..<at))
        #expect(received[at...].elementsEqual((at + dropped)..<published))
        // The bytes bound, not the count (10,000), decided: about 8 MiB of 256 KiB events.
        let kept = published - (at + dropped)
        #expect(kept >= 8 && kept <= 40, "events kept for the silent watcher: \(kept)")
    }
}
