import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `Import` / `accountctl import` (SPEC section 12): every export format that carries the
/// schema comes back as the same account on another data root, and a file that is not a
/// sound account file of that account is refused with nothing left behind.
@Suite struct ImportTests {
    /// The rows of the rich bundle's tables, as Import counts them.
    static let rowsQuery = """
        SELECT (SELECT count(*) FROM author) + (SELECT count(*) FROM book) + (SELECT count(*) FROM tag)
          + (SELECT count(*) FROM audit) + (SELECT count(*) FROM anything);
        """

    /// Everything under the data root, with sizes: what a refused import must leave as it was.
    static func listing(_ root: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root)
        var out: [String] = []
        while let name = enumerator?.nextObject() as? String {
            out.append(name + " " + String(Files.bytes(root + "/" + name)?.count ?? -1))
        }
        return out.sorted()
    }

    /// A daemon in `directory`, made here.
    static func daemon(directory: String, bundle: String) throws -> DaemonProcess {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try E2E.daemon(directory: directory, bundle: bundle)
    }

    static func importing(_ client: RawClient, _ account: String, _ path: String, rebind: Bool = false) throws -> Reply {
        var parameters: [(String, JSONValue)] = [("account", .string(account)), ("path", .string(path))]
        if rebind { parameters.append(("rebind", true)) }
        return try client.callOne(E2E.request("Import", parameters))
    }

    /// The sql and sqlite exports of alice, and a copy of her file (`.backup`, as an operator
    /// copies a live database off a machine), made on host A.
    static func exports(_ dir: borrowing TestDirectory) throws -> (source: String, files: [String: String], jsonl: String) {
        let daemon = try ExportRoundTripTests.prepare(dir)
        var files: [String: String] = [:]
        for format in ["sql", "sqlite"] {
            let path = dir.sub("alice.\(format)")
            let result = try E2E.accountctl(["export", "alice", "--format", format, "-o", path], socket: daemon.socket)
            try #require(result.status == 0, "\(result.stderr)")
            files[format] = path
        }
        let copy = dir.sub("alice-copy.sqlite")
        _ = try E2E.sqlite3(daemon.accountPath("alice"), ".backup '\(copy)'")
        files["copy"] = copy
        let jsonl = dir.sub("alice.jsonl")
        let result = try E2E.accountctl(["export", "alice", "--format", "jsonl", "-o", jsonl], socket: daemon.socket)
        try #require(result.status == 0, "\(result.stderr)")
        let source = dir.sub("source.sqlite")
        _ = try E2E.sqlite3(daemon.accountPath("alice"), ".backup '\(source)'")
        return (source, files, jsonl)
    }

    @Test func everyExportFormatComesBackWithEveryRowAndTheSameSchema() throws {
        let dir = TestDirectory()
        let (source, files, _) = try Self.exports(dir)
        let expected = try TableDump.dumpFile(path: source)
        let expectedRows = try E2E.sql(source, Self.rowsQuery)
        let typeQuery = "SELECT k, typeof(v), quote(v) FROM anything ORDER BY k;"
        // Host B: a new data root with the same bundle.
        let bundle = try BundleFixture.write(at: dir.sub("bundle-b"), steps: ExportRoundTripTests.steps)
        let hostB = try Self.daemon(directory: dir.sub("host-b"), bundle: bundle)
        let client = try hostB.client()
        for format in ["sql", "sqlite", "copy"] {
            let file = try #require(files[format])
            let result = try E2E.accountctl(["--json", "import", "alice", file], socket: hostB.socket)
            try #require(result.status == 0, "\(format): \(result.stdout) \(result.stderr) \(hostB.log.suffix(2000))")
            let reply = try JSONParser.parse(result.stdout)
            #expect(reply["account"] == "alice" && reply["version"] == 2, "\(format): \(result.stdout)")
            #expect(reply["rows"]?.intValue == Int64(expectedRows), "\(format): \(result.stdout)")
            let path = hostB.accountPath("alice")
            #expect(try E2E.sql(path, ExportRoundTripTests.masterQuery) == E2E.sql(source, ExportRoundTripTests.masterQuery), "\(format)")
            #expect(try E2E.sql(path, ExportRoundTripTests.recordsQuery) == E2E.sql(source, ExportRoundTripTests.recordsQuery), "\(format)")
            #expect(try TableDump.dumpFile(path: path) == expected, "\(format)")
            #expect(try E2E.sql(path, typeQuery) == E2E.sql(source, typeQuery), "\(format)")
            #expect(try E2E.sql(path, "PRAGMA integrity_check; PRAGMA journal_mode;") == "ok\nwal", "\(format)")
            #expect(Files.mode(path) == 0o600, "\(format)")
            // The account is usable at once, and the next import of it is refused untouched.
            #expect(try client.callOne("switch alice").parameters["action"] == "opened", "\(format)")
            let before = try E2E.sha256sum(path)
            let exists = try Self.importing(client, "alice", file)
            #expect(exists.error == .accountExists, "\(format): \(exists.parameters)")
            #expect(try E2E.sha256sum(path) == before)
            _ = try client.callOne("switch other")
            #expect(try client.callOne(E2E.request("Remove", [("account", "alice"), ("purge", true)])).error == nil)
        }
    }

    @Test func anOlderExportIsMigratedOnItsNextSwitch() throws {
        let dir = TestDirectory()
        let old = try BundleFixture.write(at: dir.sub("bundle-v1"), steps: Array(ExportRoundTripTests.steps.prefix(1)))
        let hostA = try Self.daemon(directory: dir.sub("host-a"), bundle: old)
        #expect(try hostA.client().callOne("switch alice").parameters["action"] == "created")
        let file = dir.sub("alice-v1.sqlite")
        #expect(try E2E.accountctl(["export", "alice", "--format", "sqlite", "-o", file], socket: hostA.socket).status == 0)
        let hostB = try Self.daemon(directory: dir.sub("host-b"), bundle: try BundleFixture.write(at: dir.sub("bundle-v2"), steps: ExportRoundTripTests.steps))
        let reply = try Self.importing(try hostB.client(), "alice", file)
        #expect(reply.error == nil && reply.parameters["version"] == 1, "\(reply.parameters)")
        let switched = try hostB.client().callOne("switch alice")
        #expect(switched.parameters["action"] == "migrated" && switched.parameters["version"] == 2, "\(switched.parameters)")
    }

    @Test func aCorruptForeignTooNewOrUnreadableFileIsRefusedWithNothingLeftBehind() throws {
        let dir = TestDirectory()
        let (_, files, jsonl) = try Self.exports(dir)
        let sqlite = try #require(files["sqlite"])
        let bundle = try BundleFixture.write(at: dir.sub("bundle-b"), steps: ExportRoundTripTests.steps)
        let hostB = try Self.daemon(directory: dir.sub("host-b"), bundle: bundle)
        let client = try hostB.client()
        #expect(try client.callOne("switch keep").parameters["action"] == "created")
        _ = try client.callOne("switch other")

        // A corrupt copy: the second page overwritten.
        let corrupt = dir.sub("corrupt.sqlite")
        var bytes = try #require(Files.bytes(sqlite))
        for index in 4096..<min(bytes.count, 8192) { bytes[index] = 0x55 }
        try Data(bytes).write(to: URL(fileURLWithPath: corrupt))
        // Cut short: half of the SQL (inside its transaction).
        let cut = dir.sub("cut.sql")
        let text = try String(contentsOfFile: try #require(files["sql"]), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        try Files.write(lines.prefix(lines.count / 2).joined(separator: "\n") + "\n", to: cut)
        // Too new: a later version that this bundle cannot read.
        let tooNew = dir.sub("too-new.sqlite")
        try FileManager.default.copyItem(atPath: sqlite, toPath: tooNew)
        _ = try E2E.sqlite3(tooNew, "UPDATE accountd_meta SET value = 9 WHERE key = 'last_compatible_version'; PRAGMA user_version = 9;")
        // Not an accountd file at all, and SQL that reaches out of its file.
        let foreignDB = dir.sub("plain.sqlite")
        _ = try E2E.sqlite3(foreignDB, "CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        let reaching = dir.sub("reaching.sql")
        try Files.write("ATTACH '\(dir.sub("elsewhere.db"))' AS other;\nCREATE TABLE other.t(x);\n", to: reaching)
        let vacuum = dir.sub("vacuum.sql")
        try Files.write("CREATE TABLE t(x);\nVACUUM INTO '\(dir.sub("elsewhere2.db"))';\n", to: vacuum)
        // A link to a good file, a FIFO, and a file inside the data root.
        let link = dir.sub("link.sqlite")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: sqlite)
        let fifo = dir.sub("fifo.sqlite")
        #expect(mkfifo(fifo, 0o600) == 0)
        let inside = hostB.accountPath("keep")
        // A file with a WAL beside it holding transactions.
        let withWAL = dir.sub("with-wal.sqlite")
        try FileManager.default.copyItem(atPath: sqlite, toPath: withWAL)
        try Files.write("not empty", to: withWAL + "-wal")

        let before = Self.listing(hostB.dataRoot)
        let cases: [(String, String, ErrorName, String)] = [
            ("alice", corrupt, .accountCorrupt, "cannot be read as an account file"),
            ("alice", cut, .accountCorrupt, "transaction"),
            ("alice", tooNew, .accountTooNew, "version 9"),
            ("bob", sqlite, .accountCorrupt, "belongs to account \"alice\""),
            ("alice", foreignDB, .accountCorrupt, "not an accountd"),
            ("alice", reaching, .accountCorrupt, "statement 1"),
            ("alice", vacuum, .accountCorrupt, "statement 2"),
            ("alice", jsonl, .accountCorrupt, "jsonl"),
            ("alice", link, .invalidParameter, "symbolic link"),
            ("alice", fifo, .invalidParameter, "not a regular file"),
            ("alice", inside, .invalidParameter, "inside the data root"),
            ("alice", withWAL, .invalidParameter, "-wal"),
            ("alice", dir.sub("missing.sqlite"), .invalidParameter, "cannot be found"),
            ("keep", sqlite, .accountExists, "already exists"),
        ]
        for (account, path, error, says) in cases {
            let reply = try Self.importing(client, account, path)
            let message = reply.parameters["message"]?.stringValue ?? ""
            #expect(reply.error == error && message.contains(says), "\(path): \(reply.error?.rawValue ?? "ok") \(message)")
            #expect(Self.listing(hostB.dataRoot) == before, "\(path) left something behind")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.sub("elsewhere.db")))
        #expect(!FileManager.default.fileExists(atPath: dir.sub("elsewhere2.db")))
        let relative = try Self.importing(client, "alice", "alice.sqlite")
        #expect(relative.error == .invalidParameter, "\(relative.parameters)")

        // Rebind is the operator's explicit choice: bob gets alice's data, bound to bob.
        let rebound = try E2E.accountctl(["import", "bob", sqlite, "--rebind"], socket: hostB.socket)
        #expect(rebound.status == 0, "\(rebound.stdout) \(rebound.stderr)")
        #expect(try E2E.sql(hostB.accountPath("bob"), "SELECT value FROM accountd_meta WHERE key = 'account';") == "bob")
        #expect(try client.callOne("switch bob").parameters["action"] == "opened")
        #expect(try TableDump.dumpFile(path: hostB.accountPath("bob")) == TableDump.dumpFile(path: sqlite))
    }

    /// The daemon (root here) reads the file for its caller, never beyond what the caller
    /// could read: an admin who is not root gets a file only its permissions let it read.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv"))
    func anAdminImportsOnlyAFileItCouldReadItself() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        let (_, files, _) = try Self.exports(dir)
        let sqlite = try #require(files["sqlite"])
        let bundle = try BundleFixture.write(at: dir.sub("bundle-b"), steps: ExportRoundTripTests.steps)
        try FileManager.default.createDirectory(atPath: dir.sub("host-b"), withIntermediateDirectories: true)
        #expect(chmod(dir.sub("host-b"), 0o755) == 0)
        let hostB = try E2E.daemon(
            directory: dir.sub("host-b"), bundle: bundle, environment: ["ACCOUNTD_SOCKET_MODE": "0666", "ACCOUNTD_ADMIN_USERS": "4242"])
        #expect(chmod(sqlite, 0o600) == 0)
        let asAdmin = { (account: String) in
            try AccessTests.accountctl(as: 4242, gid: 4242, socket: hostB.socket, ["import", account, sqlite])
        }
        let refused = try asAdmin("alice")
        #expect(refused.status != 0 && refused.stderr.contains("not readable by the caller"), "\(refused.stdout) \(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: hostB.accountPath("alice")))
        #expect(chmod(sqlite, 0o644) == 0)
        let allowed = try asAdmin("alice")
        #expect(allowed.status == 0, "\(allowed.stdout) \(allowed.stderr)")
        // Root reads anything.
        #expect(chmod(sqlite, 0o600) == 0)
        #expect(try E2E.accountctl(["import", "bob", sqlite, "--rebind"], socket: hostB.socket).status == 0)
    }
}
