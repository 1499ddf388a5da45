import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `Metrics` and `accountctl metrics` against the real daemon: after a known sequence of
/// calls the counters say exactly what happened, and the text parses with a real
/// Prometheus parser (`prometheus_client`, see ``MetricsTests/python``).
@Suite struct MetricsTests {
    /// The samples of a Prometheus text, `name{labels}` (as written) to value; comments left out.
    static func samples(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            samples[String(line[..<space])] = Double(line[line.index(after: space)...])
        }
        return samples
    }

    /// `accountctl metrics`, checked to succeed, as its exact output.
    static func metrics(_ daemon: DaemonProcess) throws -> String {
        let result = try E2E.accountctl(["metrics"], socket: daemon.socket)
        try #require(result.status == 0, "accountctl metrics failed: \(result.stderr)")
        return result.stdout
    }

    /// How much each sample grew from `before` to `after` (a sample missing before counts as 0).
    static func growth(_ before: [String: Double], _ after: [String: Double]) -> [String: Double] {
        var grown: [String: Double] = [:]
        for (key, value) in after where value != before[key] ?? 0 { grown[key] = value - (before[key] ?? 0) }
        return grown
    }

    @Test func countersSayExactlyWhatHappened() throws {
        let dir = TestDirectory()
        // "old" at version 1 of the sample bundle: switching to it migrates two steps.
        let oldBundle = try BundleFixture.truncate(Repository.sampleBundle, at: 1, into: dir.sub("old-bundle"))
        try E2E.createOffline("old", dataRoot: dir.sub("data"), bundle: oldBundle)
        try E2E.makeTooNewAccount("future", dataRoot: dir.sub("data"), bundle: Repository.sampleBundle, in: dir)
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }

        let before = Self.samples(try Self.metrics(daemon))
        let client = try daemon.client()
        for _ in 0..<3 { #expect(try client.callOne("ping").error == nil) }
        #expect(try client.callOne("switch bob").parameters["action"] == "created")
        #expect(try client.callOne("switch future").error == .accountTooNew)
        #expect(try client.callOne(#"{"method":"io.accountd.Switch","parameters":{"account":"-bad"}}"#).error == .invalidAccountName)
        #expect(try client.callOne("switch old").parameters["action"] == "migrated")
        #expect(try client.callOne("set user tip.hidden true").error == nil)
        #expect(try client.callOne("set user tip.count 2").error == nil)
        #expect(try client.callOne("snapshot old nightly").error == nil)
        let text = try Self.metrics(daemon)
        let after = Self.samples(text)

        let grown = Self.growth(before, after).filter { key, _ in
            // Latencies vary from run to run (their counts are checked), and how many
            // connections are open depends on when the readiness check's connection closed.
            !key.contains("_bucket{") && !(key.contains("_seconds_sum")) && key != "accountd_connections_open"
                && key != "accountd_metrics_timestamp_seconds" && !key.hasPrefix("accountd_disk_bytes{")
        }
        #expect(
            grown == [
                #"accountd_requests_total{method="Metrics",outcome="ok"}"#: 1,
                #"accountd_request_duration_seconds_count{method="Metrics"}"#: 1,
                #"accountd_requests_total{method="Ping",outcome="ok"}"#: 3,
                #"accountd_request_duration_seconds_count{method="Ping"}"#: 3,
                #"accountd_requests_total{method="Switch",outcome="ok"}"#: 2,
                #"accountd_requests_total{method="Switch",outcome="AccountTooNew"}"#: 1,
                #"accountd_requests_total{method="Switch",outcome="InvalidAccountName"}"#: 1,
                #"accountd_request_duration_seconds_count{method="Switch"}"#: 4,
                #"accountd_requests_total{method="Set",outcome="ok"}"#: 2,
                #"accountd_request_duration_seconds_count{method="Set"}"#: 2,
                #"accountd_requests_total{method="Snapshot",outcome="ok"}"#: 1,
                #"accountd_request_duration_seconds_count{method="Snapshot"}"#: 1,
                "accountd_migrations_total": 1,
                "accountd_migration_steps_total": 2,
                "accountd_migration_duration_seconds_count": 1,
                #"accountd_snapshots_total{reason="migrate"}"#: 1,
                #"accountd_snapshots_total{reason="request"}"#: 1,
                // Two Sets one after the other: two commits of one change each.
                #"accountd_group_commit_batch_size_count{scope="account"}"#: 2,
                #"accountd_group_commit_batch_size_sum{scope="account"}"#: 2,
                #"accountd_group_commit_duration_seconds_count{scope="account"}"#: 2,
                // The sequence's connection and the second accountctl.
                "accountd_connections_accepted_total": 2,
                // Read when Metrics is called: bob is new on disk, old is active and current,
                // future still too new; old's two snapshots are on disk.
                "accountd_accounts": 1,
                "accountd_active_accounts": 1,
                #"accountd_accounts_by_state{state="current"}"#: 2,
                #"accountd_accounts_by_state{state="outdated"}"#: -1,
                "accountd_snapshots_stored": 2,
            ], "grown:\n\(grown.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "\n"))")
        #expect(after["accountd_accounts"] == 3, "bob, old and future")
        #expect(after[#"accountd_migration_failures_total{error="MigrationFailed"}"#] == 0)
        #expect(after[#"accountd_accounts_by_state{state="too_new"}"#] == 1, "future")
        #expect(after.keys.filter { $0.hasPrefix("accountd_active_account{") }.isEmpty, "no account name in a label by default")
        #expect(text.hasSuffix("\n") && !text.hasSuffix("\n\n"), "accountctl metrics prints the text as it is")

        // The same text through a real Prometheus parser: every sample but the buckets agrees.
        guard let python = Self.python() else { return }
        let file = dir.sub("accountd.prom")
        try Files.write(text, to: file)
        let parsed = try E2E.run(python, ["-c", Self.parserScript, file])
        try #require(parsed.status == 0, "prometheus_client could not parse the text: \(parsed.stderr)\n\(text)")
        var types: [String: String] = [:]
        var pythonSamples: [String: Double] = [:]
        for line in parsed.stdout.split(separator: "\n") {
            let sample = try JSONParser.parse(Array(line.utf8))
            types[sample["family"]!.stringValue!] = sample["type"]!.stringValue!
            let pairs = sample["labels"]!.objectValue!.map { "\($0.0)=\"\($0.1.stringValue!)\"" }
            guard !pairs.contains(where: { $0.hasPrefix("le=") }) else { continue }
            let name = sample["sample"]!.stringValue!
            let value: Double? =
                switch sample["value"]! {
                case .double(let value): value
                case .int(let value): Double(value)
                default: nil
                }
            pythonSamples[pairs.isEmpty ? name : name + "{" + pairs.joined(separator: ",") + "}"] = value
        }
        #expect(pythonSamples == after.filter { !$0.key.contains("le=") })
        #expect(types["accountd_requests"] == "counter")
        #expect(types["accountd_request_duration_seconds"] == "histogram")
        #expect(types["accountd_group_commit_batch_size"] == "histogram")
        #expect(types["accountd_connections_open"] == "gauge")
        #expect(types["accountd_active_accounts"] == "gauge")
        #expect(types["accountd_accounts_by_state"] == "gauge")
    }

    @Test func requestsTheConnectionRefusesAreCounted() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let before = Self.samples(try Self.metrics(daemon))

        // A request behind a Watch, on the watching connection: refused by the connection,
        // before it is decoded, so under no method.
        let watcher = try daemon.client()
        try watcher.send(#"{"method":"io.accountd.Watch","more":true}"# + "\n" + "status\n")
        #expect(try watcher.readReply().error == .invalidRequest)
        // A request over requests.maxBytes (1 MiB): refused before its method is read.
        let big = try daemon.client()
        // The daemon answers and closes once it has read past the limit, so the rest of the
        // send may fail; the reply is waiting all the same.
        _ = try? big.send(#"{"method":"io.accountd.Status","parameters":{"pad":""# + String(repeating: "x", count: 1 << 21) + "\"}}\n")
        #expect(try big.readReply().error == .requestTooLarge)

        let grown = Self.growth(before, Self.samples(try Self.metrics(daemon)))
        #expect(grown[#"accountd_requests_total{method="unknown",outcome="InvalidRequest"}"#] == 1, "\(grown)")
        #expect(grown[#"accountd_requests_total{method="unknown",outcome="RequestTooLarge"}"#] == 1, "\(grown)")
        #expect(grown[#"accountd_requests_total{method="Watch",outcome="ok"}"#] == 1, "\(grown)")
    }

    /// A Set whose value cannot be read is refused before its parameters are decoded, yet it
    /// named its method: it counts under `Set`, not `unknown` (hostile32 F5).
    @Test func aRequestRefusedForItsValueCountsUnderItsMethod() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        let before = Self.samples(try Self.metrics(daemon))
        #expect(try client.callOne("set user k notjson").error == .invalidValue)
        #expect(try client.callOne("SET user k 99999999999999999999").error == .invalidValue)
        let grown = Self.growth(before, Self.samples(try Self.metrics(daemon)))
        #expect(grown[#"accountd_requests_total{method="Set",outcome="InvalidValue"}"#] == 2, "\(grown)")
        #expect(grown[#"accountd_request_duration_seconds_count{method="Set"}"#] == 2, "\(grown)")
        #expect(!grown.keys.contains { $0.contains(#"method="unknown""#) }, "\(grown)")
    }

    @Test func theReplyIsText() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let reply = try daemon.client().callOne("metrics")
        #expect(reply.error == nil)
        let text = try #require(reply.parameters["text"]?.stringValue)
        #expect(try MetricsReply(parameters: reply.parameters).text == text)
        // Present at zero before anything happened.
        #expect(Self.samples(text)[#"accountd_migration_failures_total{error="MigrationFailed"}"#] == 0)
        #expect(Self.samples(text)["accountd_accounts"] == 0)
        // Anyone may call it: no admin check.
        #expect(Method.metrics.requiresAdmin == false)
    }

    /// The Python with `prometheus_client`: `$ACCOUNTD_TEST_PYTHON`, else the build folder's
    /// virtual environment (`.build/venv`, which the Makefile sets up); nil, with the reason
    /// printed, when neither exists.
    static func python() -> String? {
        if let set = ProcessInfo.processInfo.environment["ACCOUNTD_TEST_PYTHON"], !set.isEmpty { return set }
        let venv = Repository.root + "/.build/venv/bin/python3"
        if FileManager.default.isExecutableFile(atPath: venv) { return venv }
        print("MetricsTests: skipping the prometheus_client parse: neither $ACCOUNTD_TEST_PYTHON nor \(venv) exists (make test sets it up)")
        return nil
    }

    /// Parses the file named by its argument with `prometheus_client` and prints each
    /// sample as a JSON line: family, type, sample name, labels (an object, in the text's
    /// order) and value.
    static let parserScript = """
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        for family in text_string_to_metric_families(open(sys.argv[1]).read()):
            for sample in family.samples:
                print(json.dumps({"family": family.name, "type": family.type, "sample": sample.name,
                                  "labels": sample.labels, "value": sample.value}))
        """
}
