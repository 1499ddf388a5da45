import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

@testable import AccountdDaemon

/// The replication settings, and the Litestream configuration and URLs made from them.
@Suite struct ReplicationConfigTests {
    static func settings(_ values: [String: String], in dir: borrowing TestDirectory) async throws -> DaemonSettings {
        var environment = ["ACCOUNTD_DATA_ROOT": dir.sub("data"), "ACCOUNTD_SOCKET_PATH": dir.sub("run/accountd.sock")]
        environment.merge(values) { $1 }
        try Files.write("{}\n", to: dir.sub("none.yaml"))
        return try await SettingsLoader(flags: .init(config: dir.sub("none.yaml")), environment: environment).load()
    }

    @Test func replicationIsOffUnlessAReplicaIsSet() async throws {
        let dir = TestDirectory()
        #expect(try await Self.settings([:], in: dir).replication == nil)
        let on = try #require(
            try await Self.settings(["ACCOUNTD_REPLICATION_LITESTREAM_REPLICA": "s3://bucket/host-a/"], in: dir).replication)
        #expect(on.replica.base == "s3://bucket/host-a")
        #expect(on.syncIntervalSeconds == 1)
        #expect(on.configPath == dir.sub("run/litestream.yml"))
        #expect(on.controlSocketPath == dir.sub("run/litestream.sock"))
        #expect(on.program == "litestream")
        let runtime = try #require(
            try await Self.settings(
                ["ACCOUNTD_REPLICATION_LITESTREAM_REPLICA": "file:///srv/r", "RUNTIME_DIRECTORY": dir.sub("rt")], in: dir
            ).replication)
        #expect(runtime.configPath == dir.sub("rt/litestream.yml"))
        let faster = try #require(
            try await Self.settings(
                ["ACCOUNTD_REPLICATION_LITESTREAM_REPLICA": "file:///srv/r", "ACCOUNTD_REPLICATION_LITESTREAM_SYNC_INTERVAL_SECONDS": "0.5"], in: dir
            ).replication)
        #expect(faster.syncIntervalSeconds == 0.5)
    }

    @Test func aReplicaThatIsNotAURLIsRefused() async throws {
        let dir = TestDirectory()
        await #expect(throws: SettingsLoader.Failure.self) {
            _ = try await Self.settings(["ACCOUNTD_REPLICATION_LITESTREAM_REPLICA": "/srv/replica"], in: dir)
        }
    }

    @Test func theConfigurationReplicatesTheAccountsFolderByPatternAndDeviceSqlite() throws {
        let dir = TestDirectory()
        let root = try DataRoot(dir.sub("data"))
        let settings = ReplicationSettings(
            replica: ReplicaURL(base: "s3://bucket/a b?endpoint=x"), syncIntervalSeconds: 0.25, configPath: dir.sub("run/litestream.yml"))
        let config = LitestreamConfig(settings: settings, root: root)
        try config.write()
        let text = try String(contentsOfFile: settings.configPath, encoding: .utf8)
        #expect(text == config.text)
        #expect(Files.mode(settings.configPath) == 0o600)
        for line in [
            "  path: \"\(dir.sub("run/litestream.sock"))\"", "  - dir: \"\(root.accountsDirectory)\"", "    pattern: \"*.sqlite\"",
            "    watch: true", "      url: \"s3://bucket/a b?endpoint=x\"", "      sync-interval: 250ms",
            "  - path: \"\(root.devicePath)\"", "      url: \"s3://bucket/a b/.device.sqlite?endpoint=x\"",
        ] {
            #expect(text.contains(line + "\n"), "\(line) in:\n\(text)")
        }
        #expect(LitestreamConfig.duration(1) == "1s")
        // The shortest interval the settings allow is written as it is, never as `0s`.
        #expect(LitestreamConfig.duration(SettingsLoader.syncIntervalRange.lowerBound) == "1ms")
        #expect(LitestreamConfig.duration(0.0016) == "2ms" && LitestreamConfig.duration(0.0004) == "1ms")
        #expect(LitestreamConfig.quoted("a\"b\\c") == #""a\"b\\c""#)
    }

    /// `accountd prepare-litestream` reads back, from the configuration accountd wrote, the data
    /// root, the replica's base and the control socket, whatever tuning comes before them; a
    /// file that is not accountd's is refused, naming it.
    @Test func theWrittenConfigurationIsReadBack() throws {
        let dir = TestDirectory()
        let root = try DataRoot(dir.sub("da\"ta"))
        for tuning in [ReplicationSettings.Tuning(), .init(retentionHours: 2, snapshotIntervalHours: 1, metricsAddress: "127.0.0.1:9090")] {
            let settings = ReplicationSettings(
                replica: ReplicaURL(base: "s3://bucket/a b?endpoint=http://127.0.0.1:1&region=x"), configPath: dir.sub("run/litestream.yml"), tuning: tuning)
            try LitestreamConfig(settings: settings, root: root).write()
            let facts = try LitestreamConfigFacts.read(settings.configPath)
            #expect(facts == LitestreamConfigFacts(dataRoot: root.path, replica: settings.replica.base, socket: settings.controlSocketPath))
        }
        try Files.write("dbs:\n  - path: \"/var/lib/x.db\"\n", to: dir.sub("other.yml"))
        #expect(throws: AccountdError.self) { try LitestreamConfigFacts.read(dir.sub("other.yml")) }
        #expect(throws: AccountdError.self) { try LitestreamConfigFacts.read(dir.sub("missing.yml")) }
    }

    @Test func anAccountsReplicaIsItsFileUnderTheBase() throws {
        let alice = try AccountName("alice")
        #expect(ReplicaURL(base: "file:///srv/replica/").account(alice) == "file:///srv/replica/alice.sqlite")
        #expect(ReplicaURL(base: "s3://b/p?region=x").account(alice) == "s3://b/p/alice.sqlite?region=x")
        #expect(ReplicaURL(base: "s3://b").device == "s3://b/.device.sqlite")
    }

    /// A replica's password is masked wherever the URL is shown, and in any text that
    /// carries it, as written or percent-decoded.
    @Test(arguments: [
        ("sftp://backup:S3cret@host/accountd", "sftp://backup:***@host/accountd"),
        ("s3://KEY:SECRET@bucket/p?endpoint=x", "s3://KEY:***@bucket/p?endpoint=x"),
        ("file:///srv/replica", "file:///srv/replica"),
        ("sftp://backup@host/accountd", "sftp://backup@host/accountd"),
        ("sftp://u:p%40ss@host/x", "sftp://u:***@host/x"),
        // Issue 29: a password written unencoded runs to the last `@`, whatever it holds.
        ("sftp://u:Pa/ss@host/x", "sftp://u:***@host/x"),
        ("sftp://u:Pa?ss@host/x", "sftp://u:***@host/x"),
        ("sftp://u:Pa#ss@host/x", "sftp://u:***@host/x"),
        ("sftp://u:P@ss@host/x", "sftp://u:***@host/x"),
        ("sftp://u:a/b?c#d@e@host:22/x?region=y", "sftp://u:***@host:22/x?region=y"),
    ])
    func aReplicasPasswordIsMasked(url: String, shown: String) {
        let replica = ReplicaURL(base: url)
        #expect(replica.redacted == shown)
        #expect("\(replica)" == shown)
        #expect(replica.redact("from \(url)/alice.sqlite: failed") == "from \(shown)/alice.sqlite: failed")
    }

    @Test func aReplicasPasswordIsMaskedInAnyText() {
        let replica = ReplicaURL(base: "sftp://u:p%40ss@host/x")
        #expect(replica.redact("auth failed for u with p@ss and p%40ss") == "auth failed for u with *** and ***")
        #expect(SecretRedaction.redactingAddress("backup:S3cret@host/x") == "backup:***@host/x")
        #expect(SecretRedaction.redactingURLPasswords(in: "a s3://k:s@b/x and sftp://u:v@h/y.") == "a s3://k:***@b/x and sftp://u:***@h/y.")
        // Issue 29: '/', '?', '#' and '@' in a password do not end it, in prose as in a reply.
        #expect(SecretRedaction.redactingURLPasswords(in: "to sftp://u:Pa/ss@host/x failed") == "to sftp://u:***@host/x failed")
        #expect(SecretRedaction.redactingURLPasswords(in: #"{"replica":"sftp://u:Pa?ss@host/x"}"#) == #"{"replica":"sftp://u:***@host/x"}"#)
        #expect(SecretRedaction.redactingAddress("u:Pa/s#s@host/x") == "u:***@host/x")
        #expect(ReplicaURL(base: "sftp://u:Pa/ss@host/x").secrets.first == "Pa/ss")
        #expect(ReplicaURL(base: "sftp://u:Pa?ss@host/x?region=y").device == "sftp://u:Pa?ss@host/x/.device.sqlite?region=y")
        // Neither a path with ':' nor a port is a password.
        #expect(SecretRedaction.redactingURLPasswords(in: "file:///srv/a:b@c s3://bucket/p?k=v:w@x") == "file:///srv/a:b@c s3://bucket/p?k=v:w@x")
    }

    @Test func litestreamsTimestampsAreRead() throws {
        let date = try #require(LitestreamControl.date("2026-11-23T01:27:40.860405066Z"))
        #expect(abs(date.timeIntervalSince1970 - 1_795_397_260.860) < 0.001)
        #expect(LitestreamControl.date("2026-11-23T01:27:40Z") != nil)
    }

    @Test func withoutLitestreamEveryAccountIsReportedNotReplicated() async throws {
        let dir = TestDirectory()
        let root = try DataRoot(dir.sub("data"))
        let service = ReplicationService(
            settings: ReplicationSettings(replica: ReplicaURL(base: "file:///nowhere"), configPath: dir.sub("run/litestream.yml")), root: root,
            logger: .init(label: "test"))
        let report = await service.status(accounts: [try AccountName("alice")])
        #expect(report.enabled && !report.litestream)
        #expect(report.accounts.map(\.status) == ["not-replicated"] && report.accounts.allSatisfy { !$0.replicated && $0.lastSyncAt == nil })
        // The lag is the time since the daemon started (no upload seen): unknown is never none.
        #expect(report.accounts.first?.secondsBehind != nil, "\(report.accounts)")
        // Removal without Litestream running goes ahead (logged), rather than refusing.
        try await service.release(try AccountName("alice"))
    }
}
