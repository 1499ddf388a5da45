import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Every setting is checked at start: a number out of range (or not finite) and a key
/// accountd does not know stop the daemon with exit status 78 and a line naming the key,
/// the value and what is allowed, never a crash and never a value used silently. Empty
/// admin lists name no one.
@Suite struct SettingsValidationTests {
    /// Starts accountd with `config` as its config file and waits until it exits or serves
    /// (then it is stopped): the exit status when it exited by itself, nil when it served,
    /// and its log.
    static func start(
        config: String, environment: [String: String] = [:], in dir: borrowing TestDirectory, name: String
    ) throws -> (exited: Int32?, signalled: Bool, log: String) {
        let file = dir.sub(name + ".yaml")
        try Files.write(config, to: file)
        let socket = dir.sub(name + ".sock")
        let log = dir.sub(name + ".log")
        let arguments = ["--config", file, "--data-root", dir.sub(name + "-data"), "--socket", socket, "--schema", Repository.sampleBundle]
        let process = try E2E.spawning {
            try SystemdSupport.start(Binaries.accountd, arguments, environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }, log: log)
        }
        defer { E2E.stop(process, signal: SIGKILL, timeout: 10) }
        let settled = waitUntil(timeout: 30) { !process.isRunning || FileManager.default.fileExists(atPath: socket) }
        guard settled, !process.isRunning else { return (nil, false, SystemdSupport.tail(log)) }
        process.waitUntilExit()
        let signalled = process.terminationReason == Process.TerminationReason.uncaughtSignal
        return (process.terminationStatus, signalled, SystemdSupport.tail(log))
    }

    struct BadNumber: Sendable, CustomTestStringConvertible {
        var yaml: String
        var key: String
        var shown: String
        var range: String
        var testDescription: String { "\(key): \(shown)" }
    }

    /// 1e300 and .inf used to crash the daemon (SIGILL converting to Int64); a negative
    /// timeout was used as it was.
    @Test(arguments: [
        BadNumber(yaml: "accounts:\n  lockTimeoutSeconds: 1e300\n", key: "accounts.lockTimeoutSeconds", shown: "1e+300", range: "from 0 to 3600"),
        BadNumber(yaml: "accounts:\n  lockTimeoutSeconds: .inf\n", key: "accounts.lockTimeoutSeconds", shown: "inf", range: "from 0 to 3600"),
        BadNumber(yaml: "accounts:\n  lockTimeoutSeconds: -1\n", key: "accounts.lockTimeoutSeconds", shown: "-1", range: "from 0 to 3600"),
        BadNumber(yaml: "limits:\n  idleTimeoutSeconds: 1e300\n", key: "limits.idleTimeoutSeconds", shown: "1e+300", range: "from 0 to 604800"),
        BadNumber(yaml: "limits:\n  idleTimeoutSeconds: .nan\n", key: "limits.idleTimeoutSeconds", shown: "nan", range: "from 0 to 604800"),
        BadNumber(yaml: "accounts:\n  snapshotsToKeep: 0\n", key: "accounts.snapshotsToKeep", shown: "0", range: "from 1 to 1000"),
        BadNumber(yaml: "accounts:\n  snapshotMaxAgeDays: -3\n", key: "accounts.snapshotMaxAgeDays", shown: "-3", range: "from 0 to 36500"),
        BadNumber(yaml: "accounts:\n  migrateConcurrency: 100000\n", key: "accounts.migrateConcurrency", shown: "100000", range: "from 1 to 64"),
        BadNumber(yaml: "limits:\n  maxConnections: 0\n", key: "limits.maxConnections", shown: "0", range: "from 1 to 100000"),
        BadNumber(yaml: "limits:\n  queryTimeoutMs: 0\n", key: "limits.queryTimeoutMs", shown: "0", range: "from 1 to 3600000"),
        BadNumber(yaml: "limits:\n  queryMaxRows: -5\n", key: "limits.queryMaxRows", shown: "-5", range: "from 1 to 10000000"),
        BadNumber(yaml: "requests:\n  maxBytes: 1\n", key: "requests.maxBytes", shown: "1", range: "from 64 to 268435456"),
        BadNumber(
            yaml: "replication:\n  litestream:\n    replica: file:///tmp/replica\n    syncIntervalSeconds: .inf\n",
            key: "replication.litestream.syncIntervalSeconds", shown: "inf", range: "from 0.001 to 3600"),
        // Issue 29: below 1 ms, Litestream's configuration said `sync-interval: 0s`, which it refuses.
        BadNumber(
            yaml: "replication:\n  litestream:\n    replica: file:///tmp/replica\n    syncIntervalSeconds: 0.0004\n",
            key: "replication.litestream.syncIntervalSeconds", shown: "0.0004", range: "from 0.001 to 3600"),
        BadNumber(
            yaml: "replication:\n  litestream:\n    replica: file:///tmp/replica\n    syncIntervalSeconds: 1e-300\n",
            key: "replication.litestream.syncIntervalSeconds", shown: "1e-300", range: "from 0.001 to 3600"),
        // Issue 29: a number that is not whole was refused without the range ("failed to convert to type int").
        BadNumber(yaml: "accounts:\n  snapshotsToKeep: 1e300\n", key: "accounts.snapshotsToKeep", shown: "1e+300", range: "a whole number from 1 to 1000"),
        BadNumber(yaml: "accounts:\n  snapshotsToKeep: 2.5\n", key: "accounts.snapshotsToKeep", shown: "2.5", range: "a whole number from 1 to 1000"),
    ])
    func aNumberOutOfRangeStopsTheStartNamingKeyValueAndRange(bad: BadNumber) throws {
        let dir = TestDirectory()
        let result = try Self.start(config: bad.yaml, in: dir, name: "bad")
        #expect(!result.signalled, "accountd crashed (signal \(result.exited ?? 0)): \(result.log)")
        #expect(result.exited == 78, "accountd \(result.exited.map { "exited \($0)" } ?? "served") with \(bad.yaml): \(result.log)")
        #expect(result.log.contains("setting \(bad.key) is \(bad.shown);"), "\(result.log)")
        #expect(result.log.contains(bad.range), "\(result.log)")
        #expect(!FileManager.default.fileExists(atPath: dir.sub("bad-data")), "a refused start made the data root")
    }

    /// A bad number in the environment is refused the same way.
    @Test func aNumberOutOfRangeInTheEnvironmentStopsTheStart() throws {
        let dir = TestDirectory()
        let result = try Self.start(config: "{}\n", environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "inf"], in: dir, name: "env")
        #expect(result.exited == 78, "\(result.log)")
        #expect(result.log.contains("setting accounts.lockTimeoutSeconds is inf;"), "\(result.log)")
    }

    /// Issue 29: a reload to a sync interval below 1 ms is refused as a start is, naming the
    /// key, the value and the range; Litestream's configuration keeps the interval in force.
    @Test func aSyncIntervalBelowAMillisecondIsRefusedAtReload() throws {
        let dir = TestDirectory()
        let config = dir.sub("run/litestream.yml")
        func settings(_ interval: String) -> String {
            "replication:\n  litestream:\n    replica: file://\(dir.sub("replica"))\n    config: \(config)\n    syncIntervalSeconds: \(interval)\n"
        }
        let daemon = try E2E.daemon(directory: dir.path)
        try Files.write(settings("0.25"), to: dir.sub("none.yaml"))
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 10) { ((try? String(contentsOfFile: config, encoding: .utf8)) ?? "").contains("sync-interval: 250ms") })
        for bad in ["0.0004", "1e-300"] {
            try Files.write(settings(bad), to: dir.sub("none.yaml"))
            kill(daemon.process.processIdentifier, SIGHUP)
            let refused = waitUntil(timeout: 10) {
                daemon.log.contains("reload refused: setting replication.litestream.syncIntervalSeconds is \(bad); it must be a number of seconds from 0.001 to 3600")
            }
            #expect(refused, "\(daemon.log.suffix(2000))")
            let text = try String(contentsOfFile: config, encoding: .utf8)
            #expect(text.contains("sync-interval: 250ms") && !text.contains("0s\n"), "\(text)")
        }
        #expect(try daemon.client().callOne("ping").error == nil)
    }

    struct UnknownKey: Sendable, CustomTestStringConvertible {
        var yaml: String
        var named: String
        var hint: String?
        var testDescription: String { named }
    }

    /// A misspelt key used to be ignored without a word, its default used instead.
    @Test(arguments: [
        UnknownKey(yaml: "accounts:\n  snapshotToKeep: 2\n", named: "'accounts.snapshotToKeep'", hint: "(did you mean 'accounts.snapshotsToKeep'?)"),
        UnknownKey(yaml: "acounts:\n  lockTimeoutSeconds: 5\n", named: "'acounts'", hint: "(did you mean 'accounts'?)"),
        UnknownKey(yaml: "log:\n  level: info\nwhatever: 1\n", named: "'whatever'", hint: nil),
        UnknownKey(yaml: "namespaces:\n  user: { scope: account, scop: device }\n", named: "'scop' in namespace 'user'", hint: nil),
        UnknownKey(yaml: "accounts: 5\n", named: "'accounts' is a section", hint: "snapshotsToKeep"),
        // hostile33d #2: read as absent, a replica given as a list or a section turned replication off.
        UnknownKey(
            yaml: "replication:\n  litestream:\n    replica: [\"file:///srv/replica\"]\n", named: "'replication.litestream.replica' takes one value",
            hint: "not a list"),
        UnknownKey(
            yaml: "replication:\n  litestream:\n    replica: { url: \"file:///srv/replica\" }\n", named: "'replication.litestream.replica' takes one value",
            hint: "not a section"),
        UnknownKey(yaml: "admin:\n  users: { name: root }\n", named: "'admin.users' takes a list", hint: nil),
    ])
    func anUnknownKeyStopsTheStartNamingIt(unknown: UnknownKey) throws {
        let dir = TestDirectory()
        let result = try Self.start(config: unknown.yaml, in: dir, name: "typo")
        #expect(result.exited == 78, "accountd \(result.exited.map { "exited \($0)" } ?? "served") with \(unknown.yaml): \(result.log)")
        #expect(result.log.contains(unknown.named), "\(result.log)")
        if let hint = unknown.hint { #expect(result.log.contains(hint), "\(result.log)") }
    }

    /// The config file shipped in the repository names only known settings and starts.
    @Test func theShippedConfigFileStarts() throws {
        let dir = TestDirectory()
        let text = try String(contentsOfFile: Repository.root + "/config/accountd.yaml", encoding: .utf8)
        let result = try Self.start(config: text, in: dir, name: "shipped")
        #expect(result.exited == nil, "config/accountd.yaml did not start: \(result.log)")
    }

    /// `ACCOUNTD_ADMIN_USERS=""` used to stop the daemon ("no such user or group ''").
    @Test(arguments: [
        ["ACCOUNTD_ADMIN_USERS": "", "ACCOUNTD_ADMIN_GROUPS": ""],
        ["ACCOUNTD_ADMIN_USERS": "root,,0", "ACCOUNTD_ADMIN_GROUPS": ",root, "],
    ])
    func emptyAdminListsAndItemsNameNoOne(environment: [String: String]) throws {
        let dir = TestDirectory()
        let result = try Self.start(config: "{}\n", environment: environment, in: dir, name: "admins")
        #expect(result.exited == nil, "accountd exited \(result.exited ?? 0) with \(environment): \(result.log)")
        #expect(!result.log.contains("no such user or group"), "\(result.log)")
    }

    /// config/accountd.yaml's comment on `admin:` names every method only admins may call.
    @Test func theConfigCommentNamesEveryAdminMethod() throws {
        let text = try String(contentsOfFile: Repository.root + "/config/accountd.yaml", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "admin:"))
        let comment = lines[(start + 1)...].prefix { $0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }.joined(separator: " ")
        let words = Set(comment.split { !$0.isLetter }.map(String.init))
        for method in Method.allCases {
            if method.requiresAdmin {
                #expect(words.contains(method.rawValue), "the admin comment leaves out \(method.rawValue): \(comment)")
            } else {
                #expect(!words.contains(method.rawValue), "the admin comment names \(method.rawValue), which anyone may call: \(comment)")
            }
        }
    }
}
