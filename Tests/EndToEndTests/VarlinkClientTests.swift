import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The varlink socket driven by the reference client, the `varlink` package from PyPI
/// (31.0.0), as other programs and people use it: its `Client` builds proxies from the
/// interface description the daemon serves, and `python3 -m varlink.cli` is typed as a
/// person would. `make test` installs it in `.build/venv`; without it these tests are
/// skipped, saying why.
@Suite(.enabled(if: ReferencePython.path != nil, Comment(rawValue: ReferencePython.skipReason)))
struct VarlinkClientTests {
    /// Runs `python3 ARGUMENTS`, failing the test on a non-zero exit.
    static func runPython(_ arguments: [String]) throws -> (stdout: String, stderr: String) {
        let result = try runProgram(try #require(ReferencePython.path), arguments)
        try #require(result.status == 0, "python3 \(arguments.joined(separator: " ")) exited \(result.status):\n\(result.stderr)")
        return (result.stdout, result.stderr)
    }

    static func varlinkSocket(_ daemon: DaemonProcess) -> String {
        URL(fileURLWithPath: daemon.socket).deletingLastPathComponent().path + "/io.accountd"
    }

    /// hostile31e G4: the Python program README and docs/PROTOCOL.md show an app developer
    /// (switch, Execute, Query, a streamed Query) runs as written in each.
    @Test(arguments: ["README.md", "docs/PROTOCOL.md"])
    func theDocumentedPythonAppProgramRunsAsWritten(document: String) throws {
        let protocolText = try String(contentsOfFile: Repository.root + "/" + document, encoding: .utf8)
        let start = try #require(protocolText.range(of: "```python\nimport sys\n"))
        let end = try #require(protocolText.range(of: "```", range: start.upperBound..<protocolText.endIndex))
        let program = "import sys\n" + protocolText[start.upperBound..<end.lowerBound]
        let dir = TestDirectory()
        let script = dir.sub("notes.py")
        try Files.write(program, to: script)
        let daemon = try DaemonProcess(directory: dir.path)
        let output = try Self.runPython([script, "unix:" + Self.varlinkSocket(daemon)]).stdout
        #expect(
            output == "alice is created at version 3\nchanged [1, 1]\n['key', 'value'] [['theme', 'dark']]\n['font', 'serif']\n['theme', 'dark']\n2 rows\n",
            "\(output)")
    }

    @Test func everyMethodWorksThroughTheReferenceClient() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let script = Repository.root + "/Tests/Python/varlink_calls.py"
        let output = try Self.runPython([script, "unix:" + Self.varlinkSocket(daemon)]).stdout
        let out = try JSONParser.parse(output)

        #expect(out["info"]?["product"] == "accountd")
        #expect(out["ping"] == .object([]))
        #expect(out["status"]?["state"] != nil)
        #expect(out["switch"]?["account"] == "alice" && out["switch"]?["action"] == "created")
        #expect(out["switch"]?["path"] == .string(daemon.accountPath("alice")), "\(out["switch"] ?? .null)")
        #expect(out["switchMore"]?.arrayValue?.last?["account"] == "bob", "\(out["switchMore"] ?? .null)")
        let list = try #require(out["list"]?.arrayValue)
        #expect(list.compactMap { $0["account"]?.stringValue }.sorted() == ["alice", "bob"] && list.last?["count"] == 2, "\(list)")
        #expect(out["statusAlice"]?["exists"] == true)
        #expect(out["set"] == .object([]) && out["get"]?["value"] == "dark" && out["keys"]?["keys"] == .array(["theme"]))
        #expect(out["delete"] == .object([]))
        let export = try #require(out["export"]?.arrayValue)
        #expect(export.last?["format"] == "jsonl" && export.last?["rows"] != nil, "\(export.suffix(2))")
        #expect(out["exportSql"]?.arrayValue?.contains { $0["sql"] != nil } == true)
        #expect(out["verify"]?["healthy"] == true)
        #expect(out["snapshot"]?["snapshot"]?.stringValue != nil)
        #expect(out["snapshots"]?["snapshots"]?.arrayValue?.isEmpty == false)
        #expect(out["restore"]?["restored"]?["snapshot"] != nil)
        #expect(out["migrate"]?["count"] == 2)
        #expect(out["migrateMore"]?.arrayValue?.last?["count"] == 2, "\(out["migrateMore"] ?? .null)")
        #expect(out["remove"]?["account"] == "alice" && out["remove"]?["purged"] == false)
        #expect(out["replication"]?["enabled"] == false && out["replication"]?["accounts"]?.arrayValue?.count == 1, "\(out["replication"] ?? .null)")
        #expect(out["oneway"] == .null && out["afterOneway"]?["value"] == 7, "a oneway call has no reply, and it ran")
        let results = try #require(out["execute"]?["results"]?.arrayValue, "\(out["execute"] ?? .null)")
        #expect(results.count == 2 && results.allSatisfy { $0["changes"] == 1 }, "\(results)")
        #expect(out["query"]?["columns"] == ["user_name", "age"], "\(out["query"] ?? .null)")
        #expect(out["query"]?["rows"] == [["ann", .int(.max)], ["ben", -1]] && out["query"]?["truncated"] == false, "\(out["query"] ?? .null)")
        let streamed = try #require(out["queryMore"]?.arrayValue)
        #expect(streamed.first?["columns"] == ["user_name"] && streamed.last?["rowCount"] == 2, "\(streamed)")

        // Watch on a connection of its own: a Set and a Switch made on another, as events.
        let changed = try #require(out["watch"]?["changed"], "the watcher saw no change: \(out["watch"] ?? .null)")
        #expect(changed["namespace"] == "user" && changed["scope"] == "account" && changed["account"] == "bob", "\(changed)")
        #expect(changed["value"]?.intValue != nil && changed["deleted"] == false, "\(changed)")
        let switched = try #require(out["watch"]?["switched"], "the watcher saw no switch: \(out["watch"] ?? .null)")
        #expect(switched["account"] == "carol" && switched["action"] == "created", "\(switched)")

        let errors = try #require(out["errors"])
        #expect(errors["accountNotFound"]?["error"] == "io.accountd.AccountNotFound")
        #expect(errors["invalidAccountName"]?["error"] == "io.accountd.InvalidAccountName")
        #expect(errors["expectedMore"]?["error"] == "org.varlink.service.ExpectedMore")
        #expect(errors["keyNotFound"]?["error"] == "io.accountd.KeyNotFound")
        #expect(errors["keyNotFound"]?["parameters"]?["key"] == "nope")
        #expect(errors["namespaceNotFound"]?["error"] == "io.accountd.NamespaceNotFound")
        #expect(errors["accountActive"]?["error"] == "io.accountd.AccountActive")
        #expect(errors["pullWithoutReplication"]?["error"] == "io.accountd.InvalidRequest")
        #expect(errors["statementNotAllowed"]?["error"] == "io.accountd.StatementNotAllowed")
        #expect(errors["statementNotAllowed"]?["parameters"]?["statement"] == "DROP TABLE user_info")
        #expect(errors["sqlError"]?["error"] == "io.accountd.SQLError" && errors["sqlError"]?["parameters"]?["code"] == 1, "\(errors["sqlError"] ?? .null)")
    }

    @Test func theCommandLineToolAsAPersonTypesIt() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        let address = "unix:" + Self.varlinkSocket(daemon)

        let info = try Self.runPython(["-m", "varlink.cli", "info", address]).stdout
        #expect(info.contains("Vendor: accountd") && info.contains("io.accountd") && info.contains("org.varlink.service"), "\(info)")

        let help = try Self.runPython(["-m", "varlink.cli", "help", address + "/io.accountd"]).stdout
        #expect(help.contains("interface io.accountd") && help.contains("method Status("), "\(help.prefix(400))")

        let status = try Self.runPython(["-m", "varlink.cli", "call", address + "/io.accountd.Status", "{}"])
        let reply = try JSONParser.parse(status.stdout)
        #expect(reply["state"] == "idle" && reply["bundleVersion"] != nil, "\(status.stdout) \(status.stderr)")

        let list = try Self.runPython(["-m", "varlink.cli", "call", "--more", address + "/io.accountd.List", "{}"]).stdout
        #expect(list.contains("\"count\": 0"), "\(list)")

        let missing = try Self.runPython(["-m", "varlink.cli", "call", address + "/io.accountd.Verify", #"{"account": "nobody"}"#])
        #expect(missing.stderr.contains("io.accountd.AccountNotFound"), "\(missing.stderr)")
    }
}

/// The Python of the reference varlink client: `$ACCOUNTD_TEST_PYTHON` (which `make test`
/// sets to `.build/venv/bin/python3`), else `.build/venv/bin/python3`, when it can import
/// `varlink`.
enum ReferencePython {
    static let path: String? = {
        let path = ProcessInfo.processInfo.environment["ACCOUNTD_TEST_PYTHON"] ?? Repository.root + "/.build/venv/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: path),
            let probe = try? runProgram(path, ["-c", "import varlink"]), probe.status == 0
        else { return nil }
        return path
    }()

    static var skipReason: String {
        "no Python with the varlink package (ACCOUNTD_TEST_PYTHON or .build/venv/bin/python3); `make venv` installs it"
    }
}
