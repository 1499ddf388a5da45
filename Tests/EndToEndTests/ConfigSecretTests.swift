import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A config file that is not valid YAML is refused by line, column and key, never by quoting
/// it: it holds the replica's URL, whose password must not reach stderr (the journal at start)
/// or the log (at reload) (hostile33c #11).
@Suite struct ConfigSecretTests {
    static let password = "CtxPW88"
    static let replicaLine = "    replica: \"sftp://backup:\(password)@127.0.0.1/acc\"\n"

    struct BadYAML: Sendable, CustomTestStringConvertible {
        var yaml: String
        var named: [String]
        var testDescription: String { named.joined(separator: " ") }
    }

    @Test(arguments: [
        // Yams quoted the whole mapping for a key written twice.
        BadYAML(
            yaml: "replication:\n  litestream:\n" + replicaLine + "    syncIntervalSeconds: 1\n    syncIntervalSeconds: 2\n",
            named: ["'syncIntervalSeconds' (lines 4, 5)"]),
        BadYAML(yaml: "replication:\n  litestream:\n" + replicaLine + replicaLine, named: ["'replica' (lines 3, 4)"]),
        // ... and the offending line for other errors.
        BadYAML(yaml: "replication:\n  litestream:\n    replica: \"sftp://backup:\(password)@127.0.0.1/acc\n", named: ["line 4"]),
    ])
    func aConfigFileThatIsNotYAMLIsRefusedWithoutQuotingIt(bad: BadYAML) throws {
        let dir = TestDirectory()
        let result = try SettingsValidationTests.start(config: bad.yaml, in: dir, name: "dup")
        #expect(result.exited == 78, "accountd \(result.exited.map { "exited \($0)" } ?? "served"): \(result.log)")
        #expect(result.log.contains("is not valid YAML"), "\(result.log)")
        for named in bad.named { #expect(result.log.contains(named), "\(result.log)") }
        #expect(!result.log.contains(Self.password), "the password is in the refusal: \(result.log)")
    }

    @Test func aReloadOfAConfigFileWithADuplicatedKeyLogsNoPassword() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let config = "replication:\n  litestream:\n    replica: file://\(dir.sub("replica"))\n    config: \(dir.sub("run/litestream.yml"))\n"
        try Files.write(config + Self.replicaLine, to: dir.sub("none.yaml"))
        kill(daemon.process.processIdentifier, SIGHUP)
        let refused = waitUntil(timeout: 10) { daemon.log.contains("reload refused") }
        #expect(refused && daemon.log.contains("'replica' (lines 3, 5)"), "\(daemon.log.suffix(2000))")
        #expect(!daemon.log.contains(Self.password), "the password is in the log: \(daemon.log.suffix(2000))")
        #expect(try daemon.client().callOne("ping").error == nil)
    }
}
