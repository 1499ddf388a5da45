import AccountdProtocol
import Testing

/// The typed reply models: each encodes to the documented keys, in order, and decodes
/// back to itself; a reply with a missing or mistyped key names it.
@Suite struct ReplyModelTests {
    private static let snapshot = SnapshotEntry(snapshot: "20250102T030405Z-v2-manual", version: 2, createdAt: "2025-01-02T03:04:05Z", sizeBytes: 8192)
    private static let edited = EditedMigrationInfo(version: 2, name: "0002_add_age", appliedSha256: "aa", bundleSha256: "bb")

    static let models: [any ReplyModel] = [
        InfoReply(version: "1.0.0", pid: 42, uptimeSeconds: 7, dataRoot: "/var/lib/accountd", bundle: .init(version: 3, fingerprint: "f")),
        EmptyReply(),
        DaemonStatus(active: nil, state: "idle", version: nil, bundleVersion: 3),
        DaemonStatus(active: "alice", state: "ready", version: 3, bundleVersion: 3),
        AccountStatusReply(
            account: "alice", exists: true, version: 2, target: 3, state: "outdated", sizeBytes: 4096, createdAt: "2025-01-01T00:00:00Z",
            lastMigration: .init(version: 2, name: "0002_add_age", appliedAt: "2025-01-01T00:00:01Z"), editedMigrations: [edited]),
        AccountStatusReply(
            account: "x", exists: true, version: nil, target: 3, state: "corrupt", sizeBytes: 9, createdAt: nil, lastMigration: nil,
            editedMigrations: [], problem: "not a database"),
        ListEntry(account: "alice", sizeBytes: 10),
        ListEntry(account: "alice", sizeBytes: 10, details: .init(version: nil, state: "corrupt")),
        ListSummary(count: 2),
        SwitchProgress(step: 1, of: 2, name: "0002_add_age"),
        SwitchResult(account: "alice", previous: "bob", action: "migrated", fromVersion: 1, version: 3, compatible: false, durationMs: 12.5, path: "/var/lib/accountd/accounts/alice.sqlite"),
        MigrateResult(account: "alice", outcome: .done(result: "migrated", fromVersion: 2, version: 3)),
        MigrateResult(account: "bob", outcome: .failed(error: "io.accountd.AccountTooNew", message: "too new")),
        MigrateSummary(count: 1, migrated: 1, current: 0, failed: 0, results: [MigrateResult(account: "a", outcome: .done(result: "current", fromVersion: nil, version: 3))]),
        MigrateResult(account: "carol", outcome: .skipped, of: 12),
        MigrateSummary(count: 12, migrated: 3, current: 0, failed: 1, skipped: 8, stopped: .canary),
        {
            var withdrawn = MigrateSummary(count: 4, migrated: 0, current: 0, failed: 1, skipped: 3, stopped: .withdrawn)
            (withdrawn.withdrawnVersion, withdrawn.bundleVersion) = (2, 1)
            return withdrawn
        }(),
        ExportRow(table: "user_info", row: ["user_id": 1, "user_name": "Ann", "photo": ["$base64": "AAE="]]),
        ExportChunk.sql("CREATE TABLE t(x);\n"),
        ExportChunk.data([0, 1, 2, 250, 251, 252, 253]),
        ExportTotals(format: "jsonl", tables: ["b": 2, "a": 1], rows: 3),
        ExportTotals(format: "sqlite", sizeBytes: 4096, sha256: "ab"),
        VerifyResult(account: "alice", healthy: false, integrity: "ok", foreignKeys: ["x"], schema: [], editedMigrations: [edited]),
        VerifyResult(account: "alice", healthy: true, integrity: "ok", foreignKeys: [], schema: ["not compared"], schemaCompared: false, editedMigrations: []),
        PlanReply(account: "alice", fromVersion: 1, version: 3, steps: [.init(sql: "-- lossy: x\nDROP TABLE t;", lossy: true), .init(sql: "SELECT 1;", lossy: false)]),
        PlanReply(account: "alice", fromVersion: 3, version: 3, steps: []),
        snapshot,
        SnapshotList(account: "alice", snapshots: [snapshot]),
        RestoreReply(account: "alice", restored: snapshot, saved: nil),
        RestoreReply(account: "alice", restored: snapshot, saved: snapshot, reopened: .init(action: "opened", version: 2)),
        RestoreReply(account: "alice", restored: snapshot, saved: snapshot, reopened: .init(action: "failed", version: 1, problem: "migration failed")),
        DaemonStatus(active: "alice", state: "too_new", version: 6, bundleVersion: 4, problem: "too new"),
        DaemonStatus(active: nil, state: "idle", version: nil, bundleVersion: 4),
        RemoveReply(account: "alice", purged: false, snapshot: snapshot),
        RemoveReply(account: "alice", purged: true, snapshot: nil),
        PreferenceValue(value: ["nested": [1, 2.5, nil]]),
        KeysReply(keys: ["a", "b"]),
        WatchEvent.switched(.init(account: "bob", previous: "alice", action: "created", version: 3)),
        WatchEvent.migration(.init(account: "bob", step: 1, of: 2, name: "0002_add_age", version: 2)),
        WatchEvent.changed(.init(namespace: "user", key: "theme", scope: "account", account: "bob", value: "dark", deleted: false)),
        WatchEvent.failed(.init(account: "bob", error: "io.accountd.MigrationFailed", message: "rolled back", version: 2)),
    ]

    @Test(arguments: 0..<models.count)
    func encodesAndDecodesBackToItself(index: Int) throws {
        let model = Self.models[index]
        func roundTrip<Model: ReplyModel>(_ model: Model) throws {
            let text = model.parameters.serialized()
            let decoded = try Model(parameters: try JSONParser.parse(text))
            #expect(decoded == model)
            #expect(decoded.parameters.serialized() == text)
        }
        try roundTrip(model)
    }

    @Test func keysGoOutInTheDocumentedOrder() {
        let result = SwitchResult(account: "alice", previous: nil, action: "created", fromVersion: nil, version: 3, compatible: false, durationMs: 1.5, path: "/d/accounts/alice.sqlite")
        #expect(
            result.parameters.serialized()
                == #"{"account":"alice","previous":null,"action":"created","fromVersion":null,"version":3,"compatible":false,"durationMs":1.5,"path":"/d/accounts/alice.sqlite"}"#)
        #expect(
            WatchEvent.changed(.init(namespace: "app", key: "k", scope: "global", account: nil, value: nil, deleted: true)).parameters.serialized()
                == #"{"event":"changed","namespace":"app","key":"k","scope":"global","value":null,"deleted":true}"#)
    }

    @Test func aMissingKeyIsNamed() throws {
        let error = #expect(throws: ReplyDecodingError.self) {
            try SwitchResult(parameters: ["account": "alice", "previous": nil, "action": "opened", "compatible": false, "durationMs": 1])
        }
        #expect(error?.key == "version")
        #expect(error?.found == nil)
        #expect(error?.description.contains("has no 'version'") == true)
    }

    @Test func aMistypedNestedKeyIsNamedWithItsPath() throws {
        let error = #expect(throws: ReplyDecodingError.self) {
            try InfoReply(parameters: [
                "product": "accountd", "version": "1", "protocol": 1, "pid": 1, "uptimeSeconds": 1, "dataRoot": "/d",
                "bundle": ["version": "three", "fingerprint": "f"],
            ])
        }
        #expect(error?.key == "bundle.version")
        #expect(error?.found == "string")
        #expect(error?.model == "Info")
    }

    @Test func anUnknownWatchEventIsKept() throws {
        let event = try WatchEvent(parameters: ["event": "replicated", "account": "alice"])
        #expect(event == .other(["event": "replicated", "account": "alice"]))
        #expect(event.name == "replicated")
    }

    @Test(arguments: [[UInt8](), [0], [0, 1], [0, 1, 2], Array(0...255)])
    func base64RoundTrips(bytes: [UInt8]) {
        let text = Base64.encode(bytes)
        #expect(Base64.decode(Array(text.utf8)[...]) == bytes)
    }

    @Test func base64RefusesWhatIsNotBase64() {
        for text in ["abc", "ab=c", "a*==", "===="] {
            #expect(Base64.decode(Array(text.utf8)[...]) == nil, "\(text)")
        }
    }

    @Test func anErrorReplyDecodesWithItsFacts() throws {
        let reply = try Reply.decode(Array(#"{"error":"io.accountd.AccountTooNew","parameters":{"message":"too new","account":"a","fromVersion":4}}"#.utf8))
        let error = try #require(ProtocolError(reply: reply))
        #expect(error.name == .accountTooNew)
        #expect(error.message == "too new")
        #expect(error[fact: "fromVersion"] == 4)
        #expect(ProtocolError(reply: Reply()) == nil)
    }
}
