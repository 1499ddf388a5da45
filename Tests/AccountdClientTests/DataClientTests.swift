import AccountdClient
import AccountdProtocol
import AccountdTestSupport
import Foundation
import Synchronization
import Testing

/// `query` and `execute` of the client library against the real daemon: exact values both
/// ways, rows decoded into `Decodable` types, 100,000 rows streamed, and the `data` event.
@Suite struct DataClientTests {
    @Test func valuesRoundTripExactly() async throws {
        let dir = TestDirectory()
        // A column without affinity keeps every value as it was bound.
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: ["CREATE TABLE app_data (key TEXT PRIMARY KEY NOT NULL, value);"])
        let daemon = try DaemonProcess(directory: dir.path, bundle: bundle, arguments: DaemonProcess.patientClients(in: dir.path))
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        _ = try await client.switchAccount("alice")
        let values: [SQLValue] = [
            .integer(.min), .integer(.max), .integer(0), .real(-0.0), .real(1e300), .real(5e-324), .real(0.1),
            .text("nul\u{0}inside, emoji 👩‍👩‍👧 and \u{2028}"), .text(""), .blob([0, 1, 2, 255, 0]), .blob([]), .null,
        ]
        for value in values {
            _ = try await client.execute("INSERT INTO app_data(key, value) VALUES (?, ?)", [.text("k\(values.firstIndex(of: value)!)"), value])
        }
        var read: [SQLValue] = []
        for try await row in await client.query("SELECT value FROM app_data ORDER BY rowid") { read.append(row.values[0]) }
        #expect(read.count == values.count)
        // And bound to a statement that hands them straight back.
        var echoed: [SQLValue] = []
        for value in values {
            for try await row in await client.query("SELECT ?", [value]) { echoed.append(row.values[0]) }
        }
        for (sent, got) in zip(values + values, read + echoed) {
            switch (sent, got) {
            case (.real(let a), .real(let b)):
                #expect(a.bitPattern == b.bitPattern, "\(a) came back as \(b)")
            default:
                #expect(sent == got)
            }
        }
        // The same values read by sqlite3 itself: typed as sent.
        let types = try Files.sqlite3(daemon.accountPath("alice"), "SELECT group_concat(typeof(value)) FROM app_data;")
        #expect(types.trimmingCharacters(in: .whitespacesAndNewlines) == "integer,integer,integer,real,real,real,real,text,text,blob,blob,null")
    }

    struct User: Decodable, Equatable {
        var user_id: Int64
        var user_name: String
        var age: Int?
        var photo: [UInt8]?
    }

    @Test func rowsDecodeIntoDecodableTypesAndNamedParametersBind() async throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path, arguments: DaemonProcess.patientClients(in: dir.path))
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        _ = try await client.switchAccount("alice")
        let results = try await client.execute([
            SQLStatement(sql: "INSERT INTO user_info(user_name, age) VALUES (:name, :age)", parameters: .named(["name": .text("ann"), "age": .integer(30)])),
            SQLStatement(sql: "INSERT INTO user_info(user_name, age) VALUES (@name, $age)", parameters: .named(["@name": .text("ben"), "age": .null])),
        ])
        #expect(results == [.init(changes: 1, lastInsertRowid: 1), .init(changes: 1, lastInsertRowid: 2)])
        var users: [User] = []
        for try await row in await client.query("SELECT user_id, user_name, age, x'0102' AS photo FROM user_info ORDER BY user_id") {
            users.append(try row.decode(User.self))
        }
        #expect(users == [User(user_id: 1, user_name: "ann", age: 30, photo: [1, 2]), User(user_id: 2, user_name: "ben", age: nil, photo: [1, 2])])
    }

    @Test func aHundredThousandRowsStreamInOrder() async throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path, arguments: DaemonProcess.patientClients(in: dir.path))
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        _ = try await client.switchAccount("alice")
        let insert = "WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?) INSERT INTO user_info(user_id, user_name) SELECT i, 'user ' || i FROM n"
        var statements: [SQLStatement] = []
        for chunk in 0..<100 {
            let first = Int64(chunk * 1000 + 1)
            let last: Int64 = first + 999
            statements.append(SQLStatement(sql: insert, parameters: .positional([.integer(first), .integer(last)])))
        }
        let results = try await client.execute(statements)
        #expect(results.reduce(0) { $0 + $1.changes } == 100_000)
        var count: Int64 = 0
        for try await row in await client.query("SELECT user_id, user_name FROM user_info ORDER BY user_id") {
            count += 1
            guard row.values == [.integer(count), .text("user \(count)")] else {
                Issue.record("row \(count) is \(row.values)")
                break
            }
        }
        #expect(count == 100_000)
        // The connection serves the next request after the stream.
        try await client.ping()
    }

    /// What the watcher saw, shared with the test's loop.
    final class Seen: Sendable {
        let event = Mutex<(account: String, tables: [String])?>(nil)
    }

    /// Every data event a watcher saw, in order.
    final class AllSeen: Sendable {
        let tables = Mutex<[[String]]>([])
    }

    /// hostile31e G3: an Execute that changed no row (an UPDATE matching nothing, a DELETE
    /// WHERE 0) sent a data event naming its tables anyway. Only one that changed rows does.
    @Test func anExecuteThatChangedNothingIsNoDataEvent() async throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path, arguments: DaemonProcess.patientClients(in: dir.path))
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        _ = try await client.switchAccount("alice")
        let watcher = try await AccountdClient.connect(socketPath: daemon.socket)
        let seen = AllSeen()
        let watching = Task {
            for try await event in await watcher.watch() {
                if case .data(_, let tables) = event { seen.tables.withLock { $0.append(tables) } }
            }
        }
        // Until the watch has begun (it sees the marker), and three rounds after.
        var after = 0
        for round in 0..<200 where after < 3 {
            if !seen.tables.withLock({ $0.isEmpty }) { after += 1 }
            let nothing = try await client.execute([
                SQLStatement(sql: "UPDATE user_info SET user_name = 'y' WHERE user_name = 'nobody has this name'"),
                SQLStatement(sql: "DELETE FROM user_info WHERE 0"),
            ])
            #expect(nothing.map(\.changes) == [0, 0])
            _ = try await client.execute([SQLStatement(sql: "INSERT OR REPLACE INTO app_data(key, value) VALUES ('marker', \(round))")])
            try await Task.sleep(for: .milliseconds(30))
        }
        try await Task.sleep(for: .milliseconds(200))
        let events = seen.tables.withLock { $0 }
        #expect(!events.isEmpty)
        #expect(events.allSatisfy { $0 == ["app_data"] }, "\(events)")
        watching.cancel()
        await watcher.close()
    }

    @Test func aCommittedExecuteIsADataEventNamingItsTables() async throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path, arguments: DaemonProcess.patientClients(in: dir.path))
        let client = try await AccountdClient.connect(socketPath: daemon.socket)
        _ = try await client.switchAccount("alice")
        let watcher = try await AccountdClient.connect(socketPath: daemon.socket)
        let seen = Seen()
        let watching = Task {
            for try await event in await watcher.watch() {
                if case .data(let account, let tables) = event {
                    seen.event.withLock { $0 = (account, tables) }
                    return
                }
            }
        }
        // The watch may begin after the first Execute: repeat until it is seen.
        for _ in 0..<100 where seen.event.withLock({ $0 }) == nil {
            _ = try await client.execute([
                SQLStatement(sql: "INSERT INTO user_info(user_name) VALUES ('x')"),
                SQLStatement(sql: "INSERT OR REPLACE INTO app_data(key, value) VALUES ('k', 1)"),
            ])
            try await Task.sleep(for: .milliseconds(50))
        }
        let event = seen.event.withLock { $0 }
        #expect(event?.account == "alice")
        #expect(event?.tables == ["app_data", "user_info"])
        watching.cancel()
        await watcher.close()
    }
}
