import AccountdClient
import AccountdProtocol
import AccountdTestSupport
import Crypto
import Foundation
import Testing

/// The client library against the real daemon, on a socket and data root of each test's own.
@Suite struct AccountdClientTests {
    /// Starts accountd on `directory` with `bundle`.
    private func daemon(_ directory: borrowing TestDirectory, bundle: String = Repository.sampleBundle) throws -> DaemonProcess {
        try DaemonProcess(directory: directory.path, bundle: bundle, arguments: DaemonProcess.patientClients(in: directory.path))
    }

    @Test func switchReportsEachStepOfAMultiStepMigration() async throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.truncate(Repository.sampleBundle, at: 1, into: dir.sub("v1"))
        let old = try DaemonProcess(directory: dir.path, bundle: v1, arguments: DaemonProcess.patientClients(in: dir.path))
        let first = try await AccountdClient.connect(socketPath: old.socket)
        #expect(try await first.switchAccount("alice").action == "created")
        // Another account active, so the new daemon does not migrate alice as it starts.
        _ = try await first.switchAccount("bob")
        await first.close()
        old.stop()

        let daemon = try daemon(dir)
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        var steps: [SwitchProgress] = []
        var result: SwitchResult?
        for try await event in await client.switching(to: "alice") {
            switch event {
            case .progress(let step): steps.append(step)
            case .finished(let last): result = last
            }
        }
        #expect(steps.map(\.step) == [1, 2])
        #expect(steps.allSatisfy { $0.of == 2 })
        #expect(steps.map(\.name) == ["0002_add_age", "0003_add_sex_and_app_data"])
        let switched = try #require(result)
        #expect(switched.action == "migrated")
        #expect(switched.fromVersion == 1)
        #expect(switched.version == 3)
        #expect(switched.path == daemon.accountPath("alice"), "the account file's absolute path")

        let status = try await client.status()
        #expect(status.active == "alice")
        #expect(status.state == "ready")
        #expect(status.version == 3)
        let account = try await client.status(account: "alice")
        #expect(account.exists)
        #expect(account.state == "current")
        #expect(account.lastMigration?.name == "0003_add_sex_and_app_data")
    }

    @Test func listInfoPingAndPreferences() async throws {
        let dir = TestDirectory()
        let daemon = try daemon(dir)
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        try await client.ping()
        #expect(try await client.info().product == "accountd")
        for name in ["bob", "alice"] { _ = try await client.switchAccount(name) }

        let list = try await client.list(details: true)
        #expect(list.entries.map(\.account) == ["alice", "bob"])
        #expect(list.summary.count == 2)
        #expect(list.entries.allSatisfy { $0.details?.version == 3 && $0.sizeBytes > 0 })

        try await client.set(namespace: "user", key: "theme", value: "dark")
        #expect(try await client.get(namespace: "user", key: "theme") == "dark")
        #expect(try await client.keys(namespace: "user") == ["theme"])
        try await client.delete(namespace: "user", key: "theme")
        await #expect {
            _ = try await client.get(namespace: "user", key: "theme")
        } throws: { error in
            (error as? AccountdClientError)?.errorName == .keyNotFound
        }
        #expect(try await client.keys(namespace: "user", account: "bob") == [])
    }

    /// The error `body` throws, or nil when it throws none.
    private func clientError(_ body: () async throws -> Void) async -> AccountdClientError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? AccountdClientError
        }
    }

    @Test func daemonErrorsArriveTypedWithTheirWireNameAndFacts() async throws {
        let dir = TestDirectory()
        let daemon = try daemon(dir)
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        let invalid = await clientError { _ = try await client.switchAccount("-bad") }
        guard case .daemon(let error)? = invalid else {
            Issue.record("expected a daemon error, got \(String(describing: invalid))")
            return
        }
        #expect(error.name == .invalidAccountName)
        #expect(error[fact: "account"] == "-bad")
        #expect(error.message.contains("may not begin with '-'"))
        let missing = await clientError { _ = try await client.switchAccount("nobody", create: false) }
        #expect(missing?.errorName == .accountNotFound)
        // The connection stays usable after an error reply.
        try await client.ping()
    }

    @Test("An invalid account name or label is refused before sending, with the daemon's own error",
          arguments: ["-bad", "a/b", "", String(repeating: "x", count: 129)])
    func invalidNamesAreRefusedBeforeSending(name: String) async throws {
        let dir = TestDirectory()
        let daemon = try daemon(dir)
        let quoted = JSONValue.string(name).serialized()
        func request(_ method: String, _ parameters: String) -> String {
            // Export streams only: without "more" the daemon would answer ExpectedMore first.
            let more = method == "Export" ? #","more":true"# : ""
            return #"{"method":"io.accountd.\#(method)","parameters":{\#(parameters)}\#(more)}"#
        }
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        // Each call, and the request whose reply from the daemon it must throw.
        let calls: [(request: String, call: @Sendable () async throws -> Void)] = [
            (request("Status", #""account":\#(quoted)"#), { _ = try await client.status(account: name) }),
            (request("Switch", #""account":\#(quoted)"#), { _ = try await client.switchAccount(name) }),
            (request("Switch", #""account":\#(quoted)"#), { for try await _ in await client.switching(to: name) {} }),
            (request("Migrate", #""accounts":["alice",\#(quoted)]"#), { for try await _ in await client.migrate(.accounts(["alice", name])) {} }),
            (request("Export", #""account":\#(quoted)"#), { for try await _ in await client.export(account: name) {} }),
            (request("Verify", #""account":\#(quoted)"#), { _ = try await client.verify(account: name) }),
            (request("Plan", #""account":\#(quoted)"#), { _ = try await client.plan(account: name) }),
            (request("Snapshots", #""account":\#(quoted)"#), { _ = try await client.snapshots(account: name) }),
            (request("Snapshot", #""account":\#(quoted)"#), { _ = try await client.snapshot(account: name) }),
            (request("Snapshot", #""account":"alice","label":\#(quoted)"#), { _ = try await client.snapshot(account: "alice", label: name) }),
            (request("Restore", #""account":\#(quoted)"#), { _ = try await client.restore(account: name) }),
            (request("Remove", #""account":\#(quoted)"#), { _ = try await client.remove(account: name) }),
            (request("Pull", #""account":\#(quoted)"#), { _ = try await client.pull(account: name) }),
            (request("Get", #""namespace":"user","key":"k","account":\#(quoted)"#), { _ = try await client.get(namespace: "user", key: "k", account: name) }),
            (request("Set", #""namespace":"user","key":"k","value":1,"account":\#(quoted)"#), {
                try await client.set(namespace: "user", key: "k", value: 1, account: name)
            }),
            (request("Delete", #""namespace":"user","key":"k","account":\#(quoted)"#), { try await client.delete(namespace: "user", key: "k", account: name) }),
            (request("Keys", #""namespace":"user","account":\#(quoted)"#), { _ = try await client.keys(namespace: "user", account: name) }),
        ]
        let raw = try daemon.client()
        let replies = try calls.map { try #require(ProtocolError(reply: try raw.callOne($0.request)), "\($0.request)") }
        // No daemon from here on: an error reply can only come from the client itself.
        _ = daemon.stop()
        for (index, (request, call)) in calls.enumerated() {
            let expected = replies[index]
            let thrown = await clientError(call)
            guard case .daemon(let error)? = thrown else {
                Issue.record("\(request): expected \(expected), got \(String(describing: thrown))")
                continue
            }
            #expect(error.name == expected.name, "\(request)")
            #expect(error.message == expected.message, "\(request)")
            #expect(JSONValue.object(error.facts) == JSONValue.object(expected.facts), "\(request)")
        }
    }

    @Test func anUnreachableSocketSaysWhy() async throws {
        let dir = TestDirectory()
        let path = dir.sub("none.sock")
        let missing = await clientError { _ = try await AccountdClient.connect(socketPath: path) }
        guard case .unreachable(let socket, let reason)? = missing else {
            Issue.record("expected unreachable, got \(String(describing: missing))")
            return
        }
        #expect(socket == path)
        #expect(reason.hasPrefix("no such file"))
        // A file that is no socket: nobody listens on it.
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let refused = await clientError { _ = try await AccountdClient.connect(socketPath: path) }
        guard case .unreachable(_, let why)? = refused else {
            Issue.record("expected unreachable, got \(String(describing: refused))")
            return
        }
        #expect(why.hasPrefix("connection refused"))
    }

    @Test(arguments: ExportFormat.allCases)
    func exportStreamsEveryFormat(format: ExportFormat) async throws {
        let dir = TestDirectory()
        let daemon = try daemon(dir)
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        _ = try await client.switchAccount("alice")
        try Files.sqlite3(
            daemon.accountPath("alice"),
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) "
                + "INSERT INTO user_info(user_id, user_name, age) SELECT i, 'user ' || i, i % 90 FROM n;")

        var rows: [ExportRow] = []
        var sql = ""
        var bytes: [UInt8] = []
        var totals: ExportTotals?
        for try await event in await client.export(account: "alice", format: format) {
            switch event {
            case .rows(let batch): rows += try batch.map { try $0.decoded() }
            case .chunk(.sql(let text)): sql += text
            case .chunk(.data(let data)): bytes += data
            case .finished(let last): totals = last
            }
        }
        let summary = try #require(totals)
        #expect(summary.format == format.rawValue)
        switch format {
        case .jsonl:
            #expect(rows.count == summary.rows)
            #expect(rows.filter { $0.table == "user_info" }.count == 500)
            #expect(rows.contains { $0.row["user_name"] == "user 42" })
        case .sql:
            #expect(sql.contains("CREATE TABLE"))
            #expect(sql.contains("'user 500'"))
            #expect(summary.statements ?? 0 > 0)
        case .sqlite:
            #expect(Int64(bytes.count) == summary.sizeBytes)
            let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
            #expect(digest == summary.sha256)
            #expect(bytes.starts(with: Array("SQLite format 3\0".utf8)))
        }
        // The connection is free again after the stream's end.
        try await client.ping()
    }

    @Test func watchSeesAChangedPreference() async throws {
        let dir = TestDirectory()
        let daemon = try daemon(dir)
        let watcher = try await AccountdClient.connect(socketPath: daemon.socket)
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        _ = try await client.switchAccount("alice")

        let events = await watcher.watch()
        let seen = Task { () throws -> WatchEvent.Changed? in
            for try await event in events {
                if case .changed(let changed) = event { return changed }
            }
            return nil
        }
        // The watch is registered once its request is in; keep changing until an event arrives.
        var attempt = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while !Task.isCancelled, ContinuousClock.now < deadline {
            attempt += 1
            try await client.set(namespace: "user", key: "theme", value: .int(Int64(attempt)))
            if try await client.get(namespace: "user", key: "theme") == .int(Int64(attempt)), attempt >= 3 { break }
        }
        let changed = try #require(try await seen.value)
        #expect(changed.namespace == "user")
        #expect(changed.key == "theme")
        #expect(changed.account == "alice")
        #expect(changed.deleted == false)
    }

    @Test func migrateStreamsEachAccountThenTheSummary() async throws {
        let dir = TestDirectory()
        let v2 = try BundleFixture.truncate(Repository.sampleBundle, at: 2, into: dir.sub("v2"))
        let old = try DaemonProcess(directory: dir.path, bundle: v2, arguments: DaemonProcess.patientClients(in: dir.path))
        let first = try await AccountdClient.connect(socketPath: old.socket)
        // carol ends active, so the new daemon migrates her as it starts: she is current.
        for name in ["alice", "bob", "carol"] { _ = try await first.switchAccount(name) }
        await first.close()
        old.stop()

        let daemon = try daemon(dir)
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        var results: [MigrateResult] = []
        var summary: MigrateSummary?
        for try await event in await client.migrate(.all) {
            switch event {
            case .account(let result): results.append(result)
            case .summary(let last): summary = last
            }
        }
        #expect(results.map(\.account).sorted() == ["alice", "bob", "carol"])
        #expect(results.filter { $0.account != "carol" }.allSatisfy { $0.outcome == .done(result: "migrated", fromVersion: 2, version: 3) })
        #expect(results.first { $0.account == "carol" }?.result == "current")
        #expect(summary == MigrateSummary(count: 3, migrated: 2, current: 1, failed: 0))
    }

    @Test func oneClientSharedBetweenTasksAnswersEachInTurn() async throws {
        let dir = TestDirectory()
        let daemon = try daemon(dir)
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        _ = try await client.switchAccount("alice")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<20 {
                        try await client.set(namespace: "user", key: "t\(task)", value: .int(Int64(round)))
                        #expect(try await client.get(namespace: "user", key: "t\(task)") == .int(Int64(round)))
                        #expect(try await client.list().summary.count == 1)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    @Test func aStreamLeftBeforeItsEndClosesTheConnection() async throws {
        let dir = TestDirectory()
        let daemon = try daemon(dir)
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        _ = try await client.switchAccount("alice")
        try Files.sqlite3(
            daemon.accountPath("alice"),
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
                + "INSERT INTO user_info(user_id, user_name) SELECT i, 'u' || i FROM n;")
        for try await event in await client.export(account: "alice") {
            if case .rows = event { break }
        }
        let error = await clientError { try await client.ping() }
        guard case .connectionLost(_, let reason)? = error else {
            Issue.record("expected connectionLost, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("left before its last reply"))
        // A new client works.
        try await AccountdClient.connect(socketPath: daemon.socket).ping()
    }
}
