import Testing
@testable import AccountdProtocol

/// A name these tests know to be valid.
private func name(_ raw: String) -> AccountName {
    try! AccountName(raw)  // a literal checked by AccountNameTests' rules
}

/// A label these tests know to be valid.
private func label(_ raw: String) -> SnapshotLabel {
    try! SnapshotLabel(raw)  // a literal checked by SnapshotLabel's rules
}

@Suite("Command: the typed request, to and from a Request")
struct CommandCodecTests {
    static let alice = name("alice")
    static let bob = name("bob@example.org")
    static let theme = PreferenceKey(namespace: "user", key: "theme")

    /// At least one of each case, with every parameter both at its default and not.
    static let commands: [Command] = [
        .info, .ping, .watch, .metrics, .replication, .pull(account: alice), .pull(account: alice, replica: "s3://bucket/accountd/host-a?endpoint=http://127.0.0.1:8333"),
        .importAccount(account: alice, path: "/srv/exports/alice.sqlite"), .importAccount(account: bob, path: "/srv/alice.sql", rebind: true),
        .importAccount(account: alice, path: "/srv/alice.sql", overReplica: true),
        .status(account: nil), .status(account: alice),
        .list(details: false), .list(details: true),
        .switchAccount(account: alice, create: true), .switchAccount(account: bob, create: false),
        .migrate(.all), .migrate(.accounts([alice])), .migrate(.accounts([bob, alice])),
        .migrate(.all, rollout: MigrateRollout(canary: 50)), .migrate(.accounts([alice]), rollout: MigrateRollout(canary: 1, maxFailures: 3)),
        .migrate(.accounts([alice, bob]), rollout: MigrateRollout(create: true, canaryAccounts: [bob], exclude: [alice])),
        .migrate(.all, rollout: MigrateRollout(maxFailures: 5, rollbackTo: 2)),
        .export(account: alice, format: .jsonl), .export(account: alice, format: .sql), .export(account: bob, format: .sqlite),
        .verify(account: alice), .plan(account: bob), .snapshots(account: bob),
        .restore(account: alice, snapshot: nil), .restore(account: alice, snapshot: nil, reclaim: true), .restore(account: alice, snapshot: "20260101T000000Z-v3-manual"),
        .restore(account: alice, snapshot: nil, at: ReplicaTime("2026-01-31T09:30:00.250+01:00"), reclaim: true),
        .snapshot(account: alice, label: .manual), .snapshot(account: alice, label: label("before-upgrade.2")),
        .remove(account: alice, purge: false), .remove(account: bob, purge: true), .remove(account: bob, purge: false, handoff: true),
        .get(theme), .get(PreferenceKey(namespace: "switch", key: "ké y", account: bob)),
        .get(PreferenceKey(namespace: "user", key: String(repeating: "k", count: PreferenceKey.maximumBytes))),
        .set(theme, value: "dark"), .set(theme, value: nil), .set(theme, value: ["a": [1, 2.5, true]]),
        .set(PreferenceKey(namespace: "user", key: "lang", account: alice), value: 0),
        .delete(theme), .delete(PreferenceKey(namespace: "user", key: "theme", account: alice)),
        .keys(namespace: "user", account: nil), .keys(namespace: "user", account: bob),
        .query(account: nil, statement: SQLStatement(sql: "SELECT 1"), maxRows: nil),
        .query(
            account: alice,
            statement: SQLStatement(
                sql: "SELECT ?, ?, ?, ?, ?", parameters: .positional([.null, .integer(.min), .real(-0.0), .text("a\u{0}b"), .blob([0, 255])])),
            maxRows: 5),
        .query(account: nil, statement: SQLStatement(sql: "SELECT :a", parameters: .named(["a": .integer(1), "$b": .blob([])])), maxRows: 0),
        .execute(account: nil, statements: [SQLStatement(sql: "DELETE FROM t")]),
        .execute(
            account: bob,
            statements: [
                SQLStatement(sql: "INSERT INTO t VALUES (?)", parameters: .positional([.integer(.max)])),
                SQLStatement(sql: "UPDATE t SET x = :x", parameters: .named(["x": .real(1e300)])),
            ]),
    ]

    @Test("Query and Execute parameters are refused with the parameter named", arguments: [
        (#"{"method":"io.accountd.Query","parameters":{}}"#, "sql"),
        (#"{"method":"io.accountd.Query","parameters":{"sql":"  "}}"#, "sql"),
        (#"{"method":"io.accountd.Query","parameters":{"sql":"SELECT ?","parameters":"x"}}"#, "parameters"),
        (#"{"method":"io.accountd.Query","parameters":{"sql":"SELECT ?","parameters":[[1]]}}"#, "parameters[0]"),
        (#"{"method":"io.accountd.Query","parameters":{"sql":"SELECT ?","parameters":[{"base64":"!!"}]}}"#, "parameters[0]"),
        (#"{"method":"io.accountd.Query","parameters":{"sql":"SELECT ?","parameters":[{"hex":"00"}]}}"#, "parameters[0]"),
        (#"{"method":"io.accountd.Query","parameters":{"sql":"SELECT 1","maxRows":-1}}"#, "maxRows"),
        (#"{"method":"io.accountd.Execute","parameters":{}}"#, "statements"),
        (#"{"method":"io.accountd.Execute","parameters":{"statements":[]}}"#, "statements"),
        (#"{"method":"io.accountd.Execute","parameters":{"statements":["DELETE FROM t"]}}"#, "statements"),
        (#"{"method":"io.accountd.Execute","parameters":{"statements":[{"sql":"x","params":[]}]}}"#, "statements"),
        (#"{"method":"io.accountd.Execute","parameters":{"statements":[{"sql":"x"},{"parameters":[]}]}}"#, "statements[1].sql"),
    ])
    func badSQLParameters(line: String, parameter: String) throws {
        let request = try #require(try Request.decode(Array(line.utf8)))
        #expect {
            _ = try Command(request)
        } throws: { error in
            (error as? ProtocolError)?.name == .invalidParameter && (error as? ProtocolError)?[fact: "parameter"] == .string(parameter)
        }
    }

    @Test func theCasesCoverEveryMethod() {
        #expect(Set(Self.commands.map(\.method)) == Set(Method.allCases))
    }

    @Test("A command decodes from its own request", arguments: commands, [false, true])
    func roundTrip(command: Command, more: Bool) throws {
        let request = command.request(more: more)
        #expect(request.method == command.method)
        #expect(request.more == more)
        #expect(try Command(request) == command)
    }

    @Test("A command decodes from its request's encoded line", arguments: commands, [false, true])
    func roundTripThroughTheLine(command: Command, more: Bool) throws {
        let line = command.request(more: more).encoded()
        let request = try #require(try Request.decode(bytes(line)), "\(line)")
        #expect(request.more == more)
        #expect(try Command(request) == command, "\(line)")
    }

    @Test("Parameters at their defaults are left out of the line", arguments: [
        (Command.status(account: nil), #"{"method":"io.accountd.Status"}"#),
        (.list(details: false), #"{"method":"io.accountd.List"}"#),
        (.list(details: true), #"{"method":"io.accountd.List","parameters":{"details":true}}"#),
        (.switchAccount(account: alice, create: true), #"{"method":"io.accountd.Switch","parameters":{"account":"alice"}}"#),
        (.switchAccount(account: alice, create: false), #"{"method":"io.accountd.Switch","parameters":{"account":"alice","create":false}}"#),
        (.migrate(.all), #"{"method":"io.accountd.Migrate","parameters":{"all":true}}"#),
        (.migrate(.all, rollout: MigrateRollout(maxFailures: 2)), #"{"method":"io.accountd.Migrate","parameters":{"all":true,"maxFailures":2}}"#),
        (.migrate(.all, rollout: MigrateRollout(rollbackTo: 0)), #"{"method":"io.accountd.Migrate","parameters":{"all":true,"rollbackTo":0}}"#),
        (.remove(account: alice, purge: false), #"{"method":"io.accountd.Remove","parameters":{"account":"alice"}}"#),
        (.restore(account: alice, snapshot: nil), #"{"method":"io.accountd.Restore","parameters":{"account":"alice"}}"#),
        (.set(PreferenceKey(namespace: "user", key: "theme", account: alice), value: "dark"),
         #"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"theme","value":"dark","account":"alice"}}"#),
        (.keys(namespace: "user", account: nil), #"{"method":"io.accountd.Keys","parameters":{"namespace":"user"}}"#),
    ])
    func encodedLine(command: Command, line: String) {
        #expect(command.request().encoded() == line)
    }

    @Test("The inline form decodes to the command", arguments: [
        ("info", Command.info), ("PING", .ping), ("watch", .watch), ("metrics", .metrics),
        ("status", .status(account: nil)), ("status alice", .status(account: alice)),
        ("list", .list(details: false)), ("list details", .list(details: true)),
        ("switch alice", .switchAccount(account: alice, create: true)),
        ("migrate --all", .migrate(.all)), ("migrate bob@example.org alice", .migrate(.accounts([bob, alice]))),
        ("export alice", .export(account: alice, format: .jsonl)), ("export alice sql", .export(account: alice, format: .sql)),
        ("export alice sqlite", .export(account: alice, format: .sqlite)),
        ("verify alice", .verify(account: alice)), ("plan alice", .plan(account: alice)), ("snapshots alice", .snapshots(account: alice)),
        ("restore alice", .restore(account: alice, snapshot: nil)),
        ("restore alice 20260101T000000Z-v3-manual", .restore(account: alice, snapshot: "20260101T000000Z-v3-manual")),
        ("snapshot alice", .snapshot(account: alice, label: .manual)),
        ("snapshot alice pre-upgrade", .snapshot(account: alice, label: label("pre-upgrade"))),
        ("remove alice", .remove(account: alice, purge: false)), ("remove alice purge", .remove(account: alice, purge: true)),
        ("remove alice handoff", .remove(account: alice, purge: false, handoff: true)),
        ("pull alice", .pull(account: alice)), ("pull alice file:///srv/replica", .pull(account: alice, replica: "file:///srv/replica")),
        ("import alice /srv/alice.sql", .importAccount(account: alice, path: "/srv/alice.sql")),
        ("get user theme", .get(theme)), ("get user theme alice", .get(PreferenceKey(namespace: "user", key: "theme", account: alice))),
        (#"set user theme "dark""#, .set(theme, value: "dark")),
        (#"set user theme  {"w": [1, 2]} "#, .set(theme, value: ["w": [1, 2]])),
        ("set user theme null", .set(theme, value: nil)),
        ("delete user theme", .delete(theme)), ("del user theme alice", .delete(PreferenceKey(namespace: "user", key: "theme", account: alice))),
        ("keys user", .keys(namespace: "user", account: nil)), ("keys user alice", .keys(namespace: "user", account: alice)),
    ])
    func inline(line: String, command: Command) throws {
        let request = try #require(decodedRequest(line))
        #expect(try Command(request) == command, "\(line)")
    }

    /// A refusal: the request line, the error's name, and its `parameter` fact (or, for
    /// `InvalidAccountName`, its `account` fact).
    struct Refusal: Sendable, CustomTestStringConvertible {
        var line: String
        var error: ErrorName
        var parameter: String?
        var account: String?
        var testDescription: String { line.count > 96 ? line.prefix(96) + "… (\(line.utf8.count) bytes)" : line }
    }

    static let refusals: [Refusal] = [
        // Migrate: both, or neither, of accounts and all.
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"all":true,"accounts":["alice"]}}"#, error: .invalidParameter, parameter: "accounts"),
        Refusal(line: #"{"method":"io.accountd.Migrate"}"#, error: .invalidParameter, parameter: "accounts"),
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"accounts":[]}}"#, error: .invalidParameter, parameter: "accounts"),
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"all":false}}"#, error: .invalidParameter, parameter: "accounts"),
        Refusal(line: "migrate", error: .invalidParameter, parameter: "accounts"),
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"all":true,"canary":0}}"#, error: .invalidParameter, parameter: "canary"),
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"all":true,"canary":2.5}}"#, error: .invalidParameter, parameter: "canary"),
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"all":true,"maxFailures":"1"}}"#, error: .invalidParameter, parameter: "maxFailures"),
        // Import: an absolute path; Remove: purge or handoff, not both.
        Refusal(line: "import alice alice.sqlite", error: .invalidParameter, parameter: "path"),
        Refusal(line: #"{"method":"io.accountd.Import","parameters":{"account":"alice"}}"#, error: .invalidParameter, parameter: "path"),
        Refusal(line: #"{"method":"io.accountd.Remove","parameters":{"account":"alice","purge":true,"handoff":true}}"#, error: .invalidParameter, parameter: "handoff"),
        // Export: a format that is none of the three.
        Refusal(line: "export alice csv", error: .invalidParameter, parameter: "format"),
        Refusal(line: #"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"JSONL"}}"#, error: .invalidParameter, parameter: "format"),
        // Keys: 1 to 1024 bytes.
        Refusal(line: #"{"method":"io.accountd.Get","parameters":{"namespace":"user","key":""}}"#, error: .invalidParameter, parameter: "key"),
        Refusal(line: "get user " + String(repeating: "k", count: 1025), error: .invalidParameter, parameter: "key"),
        Refusal(line: "delete user " + String(repeating: "é", count: 513), error: .invalidParameter, parameter: "key"),  // 1026 bytes
        Refusal(line: "set user " + String(repeating: "k", count: 1025) + " 1", error: .invalidParameter, parameter: "key"),
        // Set without a value.
        Refusal(line: #"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"theme"}}"#, error: .invalidValue, parameter: "value"),
        // Bad account names, wherever an account goes.
        Refusal(line: "switch ../etc", error: .invalidAccountName, account: "../etc"),
        Refusal(line: #"{"method":"io.accountd.Status","parameters":{"account":""}}"#, error: .invalidAccountName, account: ""),
        Refusal(line: "export -rf sql", error: .invalidAccountName, account: "-rf"),
        Refusal(line: "migrate alice .hidden", error: .invalidAccountName, account: ".hidden"),
        Refusal(line: "migrate alice --all", error: .invalidAccountName, account: "--all"),
        Refusal(line: "keys user a/b", error: .invalidAccountName, account: "a/b"),
        Refusal(line: "remove " + String(repeating: "x", count: 129), error: .invalidAccountName, account: String(repeating: "x", count: 129)),
        // Wrong types and missing parameters.
        Refusal(line: #"{"method":"io.accountd.Switch","parameters":{"account":"alice","create":"yes"}}"#, error: .invalidParameter, parameter: "create"),
        Refusal(line: #"{"method":"io.accountd.Switch","parameters":{"account":7}}"#, error: .invalidParameter, parameter: "account"),
        Refusal(line: #"{"method":"io.accountd.Switch","parameters":{"create":true}}"#, error: .invalidParameter, parameter: "account"),
        Refusal(line: #"{"method":"io.accountd.List","parameters":{"details":1}}"#, error: .invalidParameter, parameter: "details"),
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"accounts":"alice"}}"#, error: .invalidParameter, parameter: "accounts"),
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"accounts":["alice",1]}}"#, error: .invalidParameter, parameter: "accounts"),
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"all":"true"}}"#, error: .invalidParameter, parameter: "all"),
        Refusal(line: #"{"method":"io.accountd.Export","parameters":{"account":"alice","format":3}}"#, error: .invalidParameter, parameter: "format"),
        Refusal(line: #"{"method":"io.accountd.Restore","parameters":{"account":"alice","snapshot":["x"]}}"#, error: .invalidParameter, parameter: "snapshot"),
        Refusal(line: #"{"method":"io.accountd.Remove","parameters":{"account":"alice","purge":"purge"}}"#, error: .invalidParameter, parameter: "purge"),
        Refusal(line: #"{"method":"io.accountd.Get","parameters":{"namespace":"user","key":5}}"#, error: .invalidParameter, parameter: "key"),
        Refusal(line: #"{"method":"io.accountd.Get","parameters":{"namespace":"user"}}"#, error: .invalidParameter, parameter: "key"),
        Refusal(line: #"{"method":"io.accountd.Delete","parameters":{"key":"theme"}}"#, error: .invalidParameter, parameter: "namespace"),
        Refusal(line: "keys", error: .invalidParameter, parameter: "namespace"),
        // Snapshot labels.
        Refusal(line: "snapshot alice -bad", error: .invalidParameter, parameter: "label"),
        Refusal(line: "snapshot alice before-migrate", error: .invalidParameter, parameter: "label"),
        Refusal(line: #"{"method":"io.accountd.Migrate","parameters":{"all":true,"canaryAccounts":[]}}"#, error: .invalidParameter, parameter: "canaryAccounts"),
        Refusal(
            line: #"{"method":"io.accountd.Migrate","parameters":{"all":true,"canaryAccounts":["c1"],"exclude":["c1"]}}"#, error: .invalidParameter,
            parameter: "canaryAccounts"),
        Refusal(line: "snapshot alice Before-Restore-2", error: .invalidParameter, parameter: "label"),
        Refusal(line: #"{"method":"io.accountd.Snapshot","parameters":{"account":"alice","label":""}}"#, error: .invalidParameter, parameter: "label"),
        Refusal(line: "snapshot alice " + String(repeating: "l", count: 49), error: .invalidParameter, parameter: "label"),
        Refusal(line: "snapshot alice a/b", error: .invalidParameter, parameter: "label"),
        Refusal(line: #"{"method":"io.accountd.Snapshot","parameters":{"account":"alice","label":true}}"#, error: .invalidParameter, parameter: "label"),
    ]

    @Test("Each refusal names the error and the parameter", arguments: refusals)
    func refused(refusal: Refusal) throws {
        let request = try #require(decodedRequest(refusal.line))
        let error = #expect(throws: ProtocolError.self) { try Command(request) }
        #expect(error?.name == refusal.error)
        #expect(error?.fact("parameter") == refusal.parameter.map(JSONValue.string))
        #expect(error?.fact("account") == refusal.account.map(JSONValue.string))
        #expect(error?.message.isEmpty == false)
    }

    @Test func anInvalidAccountNameSaysWhichRuleItBreaks() throws {
        let request = try #require(decodedRequest("verify -rf"))
        let error = #expect(throws: ProtocolError.self) { try Command(request) }
        #expect(error?.message == #"invalid account name "-rf": an account name may not begin with '-'"#)
    }
}
