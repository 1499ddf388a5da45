import AccountdCore
import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

@testable import AccountdDaemon

/// Litestream's tuning and the creation setting pass through accountd's configuration into
/// the `litestream.yml` it writes; bad values stop the start, naming the key.
@Suite struct ReplicationTuningTests {
    @Test func retentionSnapshotIntervalAndMetricsAddressReachLitestreamsConfiguration() async throws {
        let dir = TestDirectory()
        let settings = try #require(
            try await ReplicationConfigTests.settings(
                [
                    "ACCOUNTD_REPLICATION_LITESTREAM_REPLICA": "s3://accountd/host-a?endpoint=http://10.0.0.5:8333&forcePathStyle=true&region=us-east-1",
                    "ACCOUNTD_REPLICATION_LITESTREAM_RETENTION_HOURS": "720", "ACCOUNTD_REPLICATION_LITESTREAM_SNAPSHOT_INTERVAL_HOURS": "0.5",
                    "ACCOUNTD_REPLICATION_LITESTREAM_METRICS_ADDRESS": "127.0.0.1:9090", "ACCOUNTD_REPLICATION_LITESTREAM_ON_CREATE": "pull",
                ], in: dir
            ).replication)
        #expect(settings.tuning == .init(retentionHours: 720, snapshotIntervalHours: 0.5, metricsAddress: "127.0.0.1:9090"))
        #expect(settings.onCreate == .pull)
        let text = LitestreamConfig(settings: settings, root: try DataRoot(dir.sub("data"))).text
        for line in ["addr: \"127.0.0.1:9090\"", "snapshot:", "  interval: 1800s", "  retention: 2592000s",
            "      url: \"s3://accountd/host-a?endpoint=http://10.0.0.5:8333&forcePathStyle=true&region=us-east-1\""] {
            #expect(text.contains("\n" + line + "\n"), "\(line) in:\n\(text)")
        }
        // Unset: Litestream's own defaults, nothing written; refuse is the default.
        let plain = try #require(try await ReplicationConfigTests.settings(["ACCOUNTD_REPLICATION_LITESTREAM_REPLICA": "file:///srv/r"], in: dir).replication)
        #expect(plain.tuning == .init() && plain.onCreate == .refuse)
        let plainText = LitestreamConfig(settings: plain, root: try DataRoot(dir.sub("data"))).text
        #expect(!plainText.contains("addr:") && !plainText.contains("snapshot:"), "\(plainText)")
    }

    @Test(arguments: [
        ("ACCOUNTD_REPLICATION_LITESTREAM_RETENTION_HOURS", "0", "replication.litestream.retentionHours"),
        ("ACCOUNTD_REPLICATION_LITESTREAM_SNAPSHOT_INTERVAL_HOURS", "soon", "replication.litestream.snapshotIntervalHours"),
        ("ACCOUNTD_REPLICATION_LITESTREAM_METRICS_ADDRESS", "localhost", "replication.litestream.metricsAddress"),
        ("ACCOUNTD_REPLICATION_LITESTREAM_ON_CREATE", "overwrite", "replication.litestream.onCreate"),
    ])
    func aBadTuningValueStopsTheStartNamingTheKey(variable: String, value: String, key: String) async throws {
        let dir = TestDirectory()
        await #expect {
            _ = try await ReplicationConfigTests.settings(["ACCOUNTD_REPLICATION_LITESTREAM_REPLICA": "file:///srv/r", variable: value], in: dir)
        } throws: { error in
            "\(error)".contains(key)
        }
    }
}
