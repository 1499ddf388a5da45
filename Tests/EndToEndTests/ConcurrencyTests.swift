import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Switching never disturbs other work: exports in progress, many clients at once, and
/// files migrated while the daemon was down.
@Suite struct ConcurrencyTests {
    static let itemSteps = ["CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL);"]

    @Test func slowExportCompletesWhileAnotherClientSwitches() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: Self.itemSteps)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        let rowCount = 200_000
        let setup = try daemon.client()
        for account in ["big", "one", "two"] {
            #expect(try setup.callOne("switch \(account)").error == nil)
        }
        try E2E.sql(daemon.accountPath("big"), E2E.insertRows("item", count: rowCount))

        // One client streams the export of `big`, reading slowly.
        let exporter = try daemon.client()
        try exporter.send(#"{"method":"io.accountd.Export","parameters":{"account":"big","format":"jsonl"},"more":true}"# + "\n")
        var seen = [Bool](repeating: false, count: rowCount + 1)
        var itemRows = 0
        var otherRows = 0
        var final: Reply?
        var badLines: [String] = []
        /// Reads one reply line; returns false after the last one.
        func readOne() throws -> Bool {
            guard let line = try exporter.readLine() else {
                badLines.append("<end of stream before the final reply>")
                return false
            }
            // Full decoding of 200k lines is slow in a debug build: rows are checked by their shape.
            let prefix = #"{"parameters":{"table":"item","row":{"id":"#
            if line.hasPrefix(prefix), line.hasSuffix(#"},"continues":true}"#) {
                let digits = line.dropFirst(prefix.count).prefix { $0.isNumber }
                if let id = Int(digits), id >= 1, id <= rowCount, !seen[id] {
                    seen[id] = true
                    itemRows += 1
                } else {
                    badLines.append(line)
                }
                return true
            }
            let reply = try Reply.decode(Array(line.utf8))
            if reply.continues {
                otherRows += 1
                return true
            }
            final = reply
            return false
        }
        // Read a first part slowly so the export is surely in progress.
        for _ in 0..<5 {
            for _ in 0..<50 { _ = try readOne() }
            Thread.sleep(forTimeInterval: 0.02)
        }

        // Meanwhile another client switches between two other accounts.
        let socket = daemon.socket
        let switches = E2E.Locked<[Reply]>([])
        let switcher = Thread {
            guard let client = try? RawClient(socket: socket) else { return }
            for index in 0..<8 {
                if let reply = try? client.callOne("switch \(index % 2 == 0 ? "one" : "two")") {
                    switches.withLock { $0.append(reply) }
                }
            }
        }
        switcher.start()
        var more = true
        // Keep reading slowly while the switches run.
        let slowDeadline = Date().addingTimeInterval(30)
        while more && switches.current.count < 8 && Date() < slowDeadline {
            for _ in 0..<50 where more { more = try readOne() }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let readWhenSwitchesDone = itemRows
        // Then the rest at full speed.
        while more { more = try readOne() }

        let replies = switches.current
        #expect(replies.count == 8)
        for reply in replies {
            #expect(reply.error == nil, "\(reply.error?.rawValue ?? ""): \(reply.message ?? "")")
            #expect(reply.parameters["action"] == "opened")
        }
        // The switches did not wait for the export to finish.
        #expect(readWhenSwitchesDone < rowCount, "the switches finished only after the export was read")

        #expect(badLines.isEmpty, "unexpected lines: \(badLines.prefix(3))")
        #expect(itemRows == rowCount)
        #expect(seen.dropFirst().allSatisfy { $0 })
        let summary = try #require(final)
        #expect(summary.error == nil)
        #expect(summary.parameters["tables"]?["item"]?.intValue == Int64(rowCount))
        #expect(summary.parameters["rows"]?.intValue == Int64(rowCount + otherRows))
        let status = try setup.callOne("status")
        #expect(status.parameters["active"] == "two")
    }

    @Test func twentyClientsAtOnceGetWellFormedReplies() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let accounts = ["acct1", "acct2", "acct3"]
        let setup = try daemon.client()
        for account in accounts { #expect(try setup.callOne("switch \(account)").error == nil) }

        let socket = daemon.socket
        let problems = E2E.Locked<[String]>([])
        let switchErrors = E2E.Locked<[String]>([])
        let replyCount = E2E.Locked(0)
        let work: @Sendable (Int) -> Void = { worker in
            do {
                let client = try RawClient(socket: socket)
                for round in 0..<5 {
                    let account = accounts[(worker + round) % accounts.count]
                    let requests = [
                        round % 2 == 0 ? "switch \(account)" : #"{"method":"io.accountd.Switch","parameters":{"account":"\#(account)"}}"#,
                        "status", #"{"method":"io.accountd.Status","parameters":{"account":"\#(account)"}}"#,
                        "ping", "list", #"{"method":"io.accountd.List","parameters":{"details":true},"more":true}"#,
                    ]
                    for request in requests {
                        // call() decodes every line: a malformed one throws.
                        let replies = try client.call(request)
                        replyCount.withLock { $0 += replies.count }
                        for reply in replies {
                            guard reply.error == nil else {
                                let text = "\(request): \(reply.error!.rawValue): \(reply.message ?? "")"
                                if request.contains("witch") {
                                    switchErrors.withLock { $0.append(text) }
                                } else {
                                    problems.withLock { $0.append(text) }
                                }
                                continue
                            }
                            guard case .object = reply.parameters else {
                                problems.withLock { $0.append("\(request): parameters are not an object") }
                                continue
                            }
                        }
                        let last = replies.last!
                        if request.hasPrefix("list") || request.contains("List") {
                            if last.parameters["count"] != 3 { problems.withLock { $0.append("\(request): count \(last.parameters)") } }
                        }
                        if request.contains("witch"), last.error == nil, last.parameters["account"] != .string(account) {
                            problems.withLock { $0.append("\(request): \(last.parameters)") }
                        }
                    }
                }
            } catch {
                problems.withLock { $0.append("worker \(worker): \(error)") }
            }
        }
        // Twenty threads, each with its own connection, all at once.
        let group = DispatchGroup()
        for worker in 0..<20 {
            group.enter()
            Thread {
                work(worker)
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        #expect(problems.current.isEmpty, "\(problems.current.prefix(5))")
        // Per round: switch 1, status 2, ping 1, and two lists of 3 accounts plus a count.
        #expect(replyCount.current == 20 * 5 * 12)
        #expect(switchErrors.current.isEmpty, "\(switchErrors.current.count) switches failed, e.g. \(switchErrors.current.first ?? "")")

        let status = try daemon.client().callOne("status")
        let active = try #require(status.parameters["active"]?.stringValue)
        #expect(accounts.contains(active))
        #expect(status.parameters["state"] == "ready")
        // What a restart would bring back is what is active now.
        #expect(try Files.savedActiveAccount(daemon.dataRoot) == active)
        #expect(daemon.process.isRunning)
    }

    @Test func accountMigratedWhileTheDaemonWasDownIsOpened() throws {
        let dir = TestDirectory()
        let old = try BundleFixture.write(at: dir.sub("v2"), steps: Array(E2E.sampleSteps.prefix(2)))
        let new = try BundleFixture.write(at: dir.sub("v3"), steps: E2E.sampleSteps)
        let first = try E2E.daemon(directory: dir.path, bundle: old)
        let created = try first.client().callOne("switch alice")
        #expect(created.parameters["action"] == "created")
        #expect(created.parameters["version"] == 2)
        try E2E.sql(first.accountPath("alice"), "INSERT INTO user_info(user_id, user_name, age) VALUES (1, 'Ann', 30), (2, 'Bob', NULL);")
        #expect(E2E.stop(first) == 0)

        let migrated = try E2E.run(Binaries.accountd, ["migrate", "--data-root", first.dataRoot, "--schema", new, "alice"])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(migrated.stdout.contains("alice: migrated from version 2"), "\(migrated.stdout)")
        #expect(try E2E.userVersion(first.accountPath("alice")) == 3)

        let second = try E2E.daemon(directory: dir.path, bundle: new)
        let client = try second.client()
        // The saved active account was opened at start.
        #expect(try client.callOne("status").parameters["active"] == "alice")
        let switched = try client.callOne("switch alice")
        #expect(switched.error == nil)
        #expect(switched.parameters["action"] == "opened")
        #expect(switched.parameters["version"] == 3)
        #expect(try E2E.sql(second.accountPath("alice"), "SELECT user_id, user_name, age, sex FROM user_info ORDER BY user_id;") == "1|Ann|30|\n2|Bob||")
        let status = try client.callOne("status alice")
        #expect(status.parameters["state"] == "current")
        #expect(status.parameters["lastMigration"]?["version"] == 3)
        #expect(E2E.stop(second) == 0)
    }
}
