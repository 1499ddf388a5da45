import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import Logging
import Testing

@testable import AccountdDaemon

/// `io.accountd.varlink` agrees with the code and the docs: the methods and their
/// parameters (``Method``), the reply models' keys, the error names, and the methods of
/// docs/PROTOCOL.md. The daemon serves the file as built in, byte for byte.
@Suite struct VarlinkInterfaceTests {
    static let path = Repository.root + "/io.accountd.varlink"

    static func interface() throws -> VarlinkInterfaceFile {
        try VarlinkInterfaceFile(try String(contentsOfFile: path, encoding: .utf8))
    }

    /// A sample of every reply model each method answers with, with every optional key present.
    static let samples: [AccountdProtocol.Method: [any ReplyModel]] = {
        let snapshot = SnapshotEntry(snapshot: "20260101T000000Z-manual", version: 3, createdAt: "2026-01-01T00:00:00Z", sizeBytes: 4096)
        let edited = EditedMigrationInfo(version: 2, name: "0002_x.sql", appliedSha256: "a", bundleSha256: "b")
        let migrated = MigrateResult(account: "alice", outcome: .done(result: "migrated", fromVersion: 1, version: 3), of: 3)
        var failed = MigrateResult(account: "bob", outcome: .failed(error: "io.accountd.MigrationFailed", message: "no"))
        failed.interrupted = true
        let skipped = MigrateResult(account: "carol", outcome: .skipped, of: 3)
        let disk = DiskUseInfo(fileBytes: 4096, walBytes: 0, snapshotBytes: 8192, snapshots: 2, litestreamBytes: 0)
        var daemonStatus = DaemonStatus(active: "alice", state: "failed", version: 3, bundleVersion: 4, problem: "the migration failed")
        (daemonStatus.migrationsRunning, daemonStatus.oldestMigrationSeconds) = (1, 12)
        daemonStatus.bundleCheckSeconds = 3
        return [
            .info: [
                InfoReply(version: "1.0", pid: 1, uptimeSeconds: 2, dataRoot: "/var/lib/accountd", bundle: .init(version: 3, fingerprint: "f"))
            ],
            .ping: [EmptyReply()],
            .metrics: [MetricsReply(text: "accountd_accounts 1\n")],
            .status: [
                daemonStatus,
                AccountStatusReply(
                    account: "alice", exists: true, version: 3, target: 3, state: "current", sizeBytes: 4096, createdAt: "2026-01-01T00:00:00Z",
                    lastMigration: .init(version: 3, name: "0003_x.sql", appliedAt: "2026-01-01T00:00:00Z"), editedMigrations: [edited],
                    problem: "damaged", disk: disk),
            ],
            .list: [ListEntry(account: "alice", sizeBytes: 4096, details: .init(version: 3, state: "current", disk: disk)), ListSummary(count: 1)],
            .switchAccount: [
                SwitchProgress(step: 1, of: 2, name: "0002_x.sql"),
                SwitchResult(account: "alice", previous: "bob", action: "migrated", fromVersion: 1, version: 3, compatible: true, durationMs: 1.5, path: "/var/lib/accountd/accounts/alice.sqlite"),
            ],
            .export: [
                ExportRow(table: "user", row: .object([("id", 1)])), ExportChunk.sql("CREATE TABLE t(x);"), ExportChunk.data([1, 2, 3]),
                ExportTotals(format: "jsonl", tables: ["user": 1], rows: 1, statements: 2, sizeBytes: 4096, sha256: "c"),
            ],
            .verify: [
                VerifyResult(account: "alice", healthy: true, integrity: "ok", foreignKeys: [], schema: [], editedMigrations: [edited])
            ],
            .plan: [PlanReply(account: "alice", fromVersion: 1, version: 2, steps: [.init(sql: "DROP TABLE t;", lossy: true)])],
            .snapshots: [SnapshotList(account: "alice", snapshots: [snapshot])],
            .restore: [
                RestoreReply(account: "alice", restored: snapshot, saved: snapshot, reopened: .init(action: "opened", version: 3)),
                RestoreReply(account: "alice", restored: snapshot, saved: snapshot, reopened: .init(action: "failed", version: 1, problem: "no")),
                RestoreReply(
                    account: "alice", restored: snapshot, saved: snapshot, reopened: .init(action: "opened", version: 3), restoredFrom: "replica",
                    at: "2026-01-01T00:00:00Z"),
            ],
            .snapshot: [snapshot],
            .remove: [RemoveReply(account: "alice", purged: false, snapshot: snapshot, handoff: true)],
            .migrate: [
                migrated, failed, skipped,
                MigrateSummary(
                    count: 3, migrated: 1, current: 0, failed: 1, skipped: 1, stopped: .maxFailures, results: [migrated, failed, skipped],
                    created: 1, restored: 1),
                {
                    var withdrawn = MigrateSummary(count: 1, migrated: 0, current: 0, failed: 1, stopped: .withdrawn)
                    (withdrawn.withdrawnVersion, withdrawn.bundleVersion, withdrawn.interrupted) = (5, 4, 1)
                    return withdrawn
                }(),
            ],
            .get: [PreferenceValue(value: "dark")],
            .set: [EmptyReply()],
            .delete: [EmptyReply()],
            .keys: [KeysReply(keys: ["theme"])],
            .replication: [
                ReplicationReply(
                    enabled: true, replica: "file:///srv/replica", litestream: true,
                    accounts: [ReplicationAccount(account: "alice", replicated: true, status: "replicating", lastSyncAt: "2026-01-01T00:00:00Z", secondsBehind: 0.5)],
                    device: ReplicationAccount(account: "device.sqlite", replicated: true, status: "replicating", lastSyncAt: nil, secondsBehind: 0.2),
                    lagThresholdSeconds: 5, litestreamReplica: "file:///srv/old-replica")
            ],
            .pull: [PullReply(account: "alice", version: 3, sizeBytes: 4096, txid: "0000000000000004")],
            .watch: [
                WatchEvent.switched(.init(account: "alice", previous: "bob", action: "opened", version: 3)),
                WatchEvent.migration(.init(account: "alice", step: 1, of: 2, name: "0002_x.sql", version: 2)),
                WatchEvent.changed(.init(namespace: "user", key: "theme", scope: "account", account: "alice", value: "dark", deleted: false)),
                WatchEvent.failed(.init(account: "alice", error: "io.accountd.MigrationFailed", message: "no", version: 3)),
                WatchEvent.missed(count: 3),
                WatchEvent.data(account: "alice", tables: ["notes"]),
            ],
            .query: [
                QueryReply(columns: ["id"], rows: [[.integer(1)]], rowCount: 1, truncated: false)
            ],
            .execute: [ExecuteReply(results: [.init(changes: 1, lastInsertRowid: 1)])],
            .importAccount: [ImportReply(account: "alice", version: 3, rows: 12)],
        ]
    }()

    @Test func everyMethodIsDeclaredWithExactlyItsParameters() throws {
        let interface = try Self.interface()
        #expect(interface.name == AccountdProtocol.Method.interface)
        #expect(Set(interface.methods.keys) == Set(AccountdProtocol.Method.allCases.map(\.rawValue)))
        for method in AccountdProtocol.Method.allCases {
            let declared = try #require(interface.methods[method.rawValue], "\(method.rawValue) is not declared")
            #expect(Set(declared.parameters) == method.parameterNames, "\(method.rawValue)")
            #expect(declared.parameters.count == method.parameterNames.count, "\(method.rawValue) declares a parameter twice")
        }
    }

    @Test func everyReplyModelsKeysAreTheDeclaredReplyFields() throws {
        let interface = try Self.interface()
        #expect(Set(Self.samples.keys) == Set(AccountdProtocol.Method.allCases), "a sample for every method")
        for (method, samples) in Self.samples {
            let declared = Set(try #require(interface.methods[method.rawValue]).replies)
            var seen = Set<String>()
            for sample in samples {
                let keys = Set((sample.parameters.objectValue ?? []).map { $0.0 })
                #expect(keys.isSubset(of: declared), "\(method.rawValue): \(type(of: sample)) has \(keys.subtracting(declared).sorted()) undeclared")
                seen.formUnion(keys)
            }
            #expect(seen == declared, "\(method.rawValue): declared but never sent: \(declared.subtracting(seen).sorted())")
        }
    }

    @Test func nestedRecordsMatchTheirModels() throws {
        let interface = try Self.interface()
        let snapshot = SnapshotEntry(snapshot: "s", version: 1, createdAt: "t", sizeBytes: 1)
        let edited = EditedMigrationInfo(version: 2, name: "n", appliedSha256: "a", bundleSha256: "b")
        let migrated = MigrateResult(account: "a", outcome: .done(result: "migrated", fromVersion: 1, version: 2), of: 1)
        var failed = MigrateResult(account: "a", outcome: .failed(error: "e", message: "m"))
        failed.interrupted = true
        let keys: (JSONValue) -> Set<String> = { Set(($0.objectValue ?? []).map { $0.0 }) }
        #expect(Set(try #require(interface.types["SnapshotEntry"])) == keys(snapshot.parameters))
        #expect(Set(try #require(interface.types["EditedMigration"])) == keys(edited.parameters))
        #expect(Set(try #require(interface.types["MigrateResult"])) == keys(migrated.parameters).union(keys(failed.parameters)))
        #expect(Set(try #require(interface.types["PlanStep"])) == keys(PlanReply.Step(sql: "s", lossy: false).parameters))
        #expect(Set(try #require(interface.types["ExportFormat"])) == Set(ExportFormat.allCases.map(\.rawValue)))
        let replicated = ReplicationAccount(account: "a", replicated: true, status: "replicating", lastSyncAt: "t", secondsBehind: 1)
        #expect(Set(try #require(interface.types["ReplicationAccount"])) == keys(replicated.parameters))
        #expect(Set(try #require(interface.types["Statement"])) == keys(SQLStatement(sql: "s", parameters: .positional([.null])).json))
        let result = ExecuteReply(results: [.init(changes: 1, lastInsertRowid: 2)]).parameters["results"]?.arrayValue?.first ?? .null
        #expect(Set(try #require(interface.types["StatementResult"])) == keys(result))
    }

    @Test func everyErrorIsDeclared() throws {
        let interface = try Self.interface()
        #expect(Set(interface.errors.keys) == Set(ErrorName.accountdErrors.map(\.shortName)))
        for name in ErrorName.accountdErrors {
            #expect(name.rawValue.hasPrefix(AccountdProtocol.Method.interface + "."), "\(name)")
            #expect(interface.errors[name.shortName]?.first == "message", "\(name.shortName) carries message first")
        }
    }

    @Test(arguments: [
        AccountdError.Kind.invalidAccountName, .accountNotFound, .accountTooNew, .accountCorrupt, .accountBusy, .accountActive,
        .migrationFailed, .invalidBundle, .snapshotNotFound, .storage,
    ])
    func everyFactOfAnAccountErrorIsADeclaredParameter(kind: AccountdError.Kind) throws {
        let error = AccountdError(kind, "m", account: "alice", file: "f", line: 1, fromVersion: 1, toVersion: 2, details: ["d"])
        let reply = ErrorMapping.reply(for: error, method: nil, logger: Logger(label: "test"))
        let name = try #require(reply.error)
        let declared = Set(try #require(try Self.interface().errors[name.shortName], "\(name) is not declared"))
        let sent = Set((reply.parameters.objectValue ?? []).map { $0.0 })
        #expect(sent.isSubset(of: declared), "\(name): \(sent.subtracting(declared).sorted()) undeclared")
    }

    @Test func theMethodsOfTheProtocolDocumentAreTheDeclaredOnes() throws {
        let text = try String(contentsOfFile: Repository.root + "/docs/PROTOCOL.md", encoding: .utf8)
        var documented = Set<String>()
        var inMethods = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("## ") { inMethods = line == "## Methods" }
            guard inMethods, line.hasPrefix("### ") else { continue }
            let title = line.dropFirst(4).split(separator: "(").first ?? ""
            for word in title.replacingOccurrences(of: " and ", with: ", ").split(separator: ",") {
                documented.insert(word.trimmingCharacters(in: .whitespaces))
            }
        }
        #expect(documented == Set(try Self.interface().methods.keys), "docs/PROTOCOL.md's ### headings under ## Methods")
    }

    @Test func theDaemonServesTheRepositorysFile() throws {
        #expect(VarlinkInterfaces.accountd == (try String(contentsOfFile: Self.path, encoding: .utf8)))
    }
}
