import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SPEC section 10: any bytes on the socket, any account name and any damaged file get a
/// clear error reply, and the daemon keeps serving everyone.
@Suite struct BadInputTests {
    /// The daemon still answers on a fresh connection, and is still running.
    static func expectAlive(_ daemon: DaemonProcess, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(daemon.process.isRunning, sourceLocation: sourceLocation)
        let reply = try daemon.client().callOne("ping")
        #expect(reply.error == nil, sourceLocation: sourceLocation)
        #expect(reply.parameters == [:], sourceLocation: sourceLocation)
    }

    @Test func randomBytesGetErrorRepliesAndTheDaemonKeepsServing() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        var random = SeededRandom(seed: 0x5EED_0001)

        // 1. Lines of random bytes (NUL, invalid UTF-8 and all), each one line: one error reply each.
        let client = try daemon.client()
        var lines: [[UInt8]] = []
        for index in 0..<300 {
            var line = random.bytes(1 + random.below(index % 10 == 0 ? 3000 : 120))
            line = line.map { $0 == 0x0A || $0 == 0x0D ? 0x00 : $0 }
            if line[0] == 0x20 || line[0] == 0x09 { line[0] = 0xFF }
            if index % 3 == 0 { line[0] = 0x00 }
            if index % 7 == 0 { line.insert(contentsOf: [0xC3, 0x28, 0xED, 0xA0, 0x80], at: 0) }  // invalid UTF-8 first
            lines.append(line)
        }
        var names: [String: Int] = [:]
        for (index, line) in lines.enumerated() {
            try client.send(line + [0x0A])
            let reply = try client.readReply()
            let name = reply.error?.rawValue ?? "none"
            names[name, default: 0] += 1
            #expect(reply.error != nil, "line \(index) was accepted: \(reply.parameters)")
            #expect(reply.message?.isEmpty == false, "line \(index): an error reply without a message")
        }
        #expect(Set(names.keys).isSubset(of: ["io.accountd.InvalidRequest", "org.varlink.service.MethodNotFound"]), "\(names)")
        #expect(names["io.accountd.InvalidRequest", default: 0] > 0)
        #expect(try client.callOne("ping").error == nil)

        // 2. Unframed random bytes with newlines anywhere, on several connections, some closed mid-line.
        for round in 0..<10 {
            let noisy = try daemon.client()
            try noisy.send(random.bytes(2000 + random.below(20_000)))
            if round % 2 == 0 { noisy.finishSending() }
            // Whatever comes back is well-formed reply lines.
            if round % 2 == 0 {
                while let line = try? noisy.readLine() {
                    let reply = try Reply.decode(Array(line.utf8))
                    #expect(reply.error != nil || reply.parameters["count"] != nil || reply.parameters == [:] || reply.parameters["product"] != nil)
                }
            }
        }
        try Self.expectAlive(daemon)
    }

    @Test func malformedRequestsGetTheirErrors() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let cases: [(String, Set<String>)] = [
            ("garbage line here", ["org.varlink.service.MethodNotFound"]),
            ("%%%% ### !!!", ["org.varlink.service.MethodNotFound"]),
            ("{", ["io.accountd.InvalidRequest"]),
            (#"{"method":"#, ["io.accountd.InvalidRequest"]),
            (#"{"method":"io.accountd.Ping""#, ["io.accountd.InvalidRequest"]),
            (#"{"method":'io.accountd.Ping'}"#, ["io.accountd.InvalidRequest"]),
            (#"{"method":"io.accountd.Ping",}"#, ["io.accountd.InvalidRequest"]),
            (#"{"method":"io.accountd.Ping"} trailing"#, ["io.accountd.InvalidRequest"]),
            (#"{"method":"io.accountd.Ping","method":"io.accountd.Info"}"#, ["io.accountd.InvalidRequest"]),
            (String(repeating: "{\"a\":", count: 300), ["io.accountd.InvalidRequest"]),
            ("{}", ["io.accountd.InvalidRequest"]),
            (#"{"method":1}"#, ["io.accountd.InvalidRequest"]),
            (#"{"method":null}"#, ["io.accountd.InvalidRequest"]),
            (#"{"parameters":{}}"#, ["io.accountd.InvalidRequest"]),
            (#"{"method":"io.accountd.Ping","parameters":[]}"#, ["io.accountd.InvalidRequest"]),
            (#"{"method":"io.accountd.Ping","parameters":"x"}"#, ["io.accountd.InvalidRequest"]),
            (#"{"method":"io.accountd.Ping","more":"yes"}"#, ["io.accountd.InvalidRequest"]),
            (#"{"method":"io.accountd.Ping","extra":1}"#, ["io.accountd.InvalidRequest"]),
            // JSON arrays and other non-objects: not a request object (the daemon may read them as inline words).
            ("[1,2,3]", ["io.accountd.InvalidRequest", "org.varlink.service.MethodNotFound"]),
            (#"[{"method":"io.accountd.Ping"}]"#, ["io.accountd.InvalidRequest", "org.varlink.service.MethodNotFound"]),
            (#""io.accountd.Ping""#, ["io.accountd.InvalidRequest", "org.varlink.service.MethodNotFound"]),
            ("null", ["io.accountd.InvalidRequest", "org.varlink.service.MethodNotFound"]),
            ("42", ["io.accountd.InvalidRequest", "org.varlink.service.MethodNotFound"]),
            // Unknown methods.
            (#"{"method":"io.accountd.Explode"}"#, ["org.varlink.service.MethodNotFound"]),
            (#"{"method":"org.varlink.service.GetInfo"}"#, ["org.varlink.service.MethodNotFound"]),
            (#"{"method":"io.accountd.ping"}"#, ["org.varlink.service.MethodNotFound"]),
            (#"{"method":""}"#, ["org.varlink.service.MethodNotFound", "io.accountd.InvalidRequest"]),
            ("explode now", ["org.varlink.service.MethodNotFound"]),
            // Wrong parameter types and shapes.
            (#"{"method":"io.accountd.Switch","parameters":{"account":7}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Switch","parameters":{"account":null}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Switch","parameters":{"account":["a"]}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Switch","parameters":{}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Switch","parameters":{"account":"a","create":"yes"}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Switch","parameters":{"acount":"a"}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Status","parameters":{"account":{"x":1}}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.List","parameters":{"details":"yes"},"more":true}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Export","parameters":{"account":"alice","format":5},"more":true}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"xml"},"more":true}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Export","parameters":{"account":"alice"}}"#, ["org.varlink.service.ExpectedMore"]),
            (#"{"method":"io.accountd.Migrate","parameters":{"accounts":"alice"}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Migrate","parameters":{"accounts":[1,2]}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Migrate","parameters":{"accounts":[]}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Migrate","parameters":{"all":"true"}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Restore","parameters":{"account":"alice","snapshot":5}}"#, ["org.varlink.service.InvalidParameter"]),
            (#"{"method":"io.accountd.Ping","parameters":{"x":1}}"#, ["org.varlink.service.InvalidParameter"]),
            ("switch", ["org.varlink.service.InvalidParameter"]),
            ("status a b c", ["org.varlink.service.InvalidParameter"]),
            ("list everything", ["org.varlink.service.InvalidParameter"]),
        ]
        let client = try daemon.client()
        // Pipelined: every request is sent before any reply is read; replies come in order.
        for (request, _) in cases { try client.send(request + "\r\n") }
        try client.send("ping\n")
        for (request, expected) in cases {
            let reply = try client.readReply()
            #expect(expected.contains(reply.error?.rawValue ?? "none"), "\(request) -> \(reply.error?.rawValue ?? "success") \(reply.parameters)")
            #expect(reply.message?.isEmpty == false, "\(request): no message")
        }
        #expect(try client.readReply().parameters == [:])
        // Nothing was created by any of it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.dataRoot + "/accounts") == [])
        try Self.expectAlive(daemon)
    }

    @Test func hostileAccountNamesAreRefusedBeforeTheFilesystemIsTouched() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let names = [
            "..", ".", "../escape", "../../../tmp/escape", "a/b", "/abs", "a\u{0}b", "\u{0}", String(repeating: "a", count: 129),
            "-rf", "--all", ".hidden", "", " ", "a b", "tab\there", "new\u{1}line", "ä", "a\\b", "a*", "😀",
        ]
        func listing() throws -> [String] {
            try (FileManager.default.subpathsOfDirectory(atPath: dir.path)).filter { !$0.hasSuffix(".log") }.sorted()
        }
        let before = try listing()
        let client = try daemon.client()
        for name in names {
            let quoted = JSONValue.string(name).serialized()
            for request in [
                #"{"method":"io.accountd.Switch","parameters":{"account":\#(quoted)}}"#,
                #"{"method":"io.accountd.Status","parameters":{"account":\#(quoted)}}"#,
                #"{"method":"io.accountd.Export","parameters":{"account":\#(quoted),"format":"sqlite"},"more":true}"#,
                #"{"method":"io.accountd.Verify","parameters":{"account":\#(quoted)}}"#,
                #"{"method":"io.accountd.Snapshots","parameters":{"account":\#(quoted)}}"#,
                #"{"method":"io.accountd.Restore","parameters":{"account":\#(quoted)}}"#,
                #"{"method":"io.accountd.Migrate","parameters":{"accounts":[\#(quoted)]}}"#,
            ] {
                let reply = try client.callOne(request)
                #expect(reply.error == .invalidAccountName, "\(request) -> \(reply.error?.rawValue ?? "success") \(reply.parameters)")
            }
        }
        // The inline form, with the raw bytes on the line.
        for line in ["switch ..", "switch a/b", "switch -x", "switch .x", "status ../../x", "export ../x sql", "switch " + String(repeating: "b", count: 129)] {
            #expect(try client.callOne(line).error == .invalidAccountName, "\(line)")
        }
        try client.send(Array("switch a".utf8) + [0] + Array("b\n".utf8))
        #expect(try client.readReply().error == .invalidAccountName)
        // 128 characters is the longest allowed name.
        let longest = String(repeating: "c", count: 128)
        #expect(try client.callOne("switch \(longest)").parameters["action"] == "created")
        let after = try listing().filter { !$0.contains(longest) && $0 != "data/state.json" }
        #expect(after == before)
        try Self.expectAlive(daemon)
    }

    @Test func requestOverTheLimitGetsRequestTooLargeAndIsClosed() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_REQUESTS_MAX_BYTES": "4096"])

        // Exactly at the limit: served.
        let atLimit = try daemon.client()
        let ping = "ping" + String(repeating: " ", count: 4096 - 4)
        #expect(ping.utf8.count == 4096)
        let pong = try atLimit.callOne(ping)
        #expect(pong.error == nil)
        #expect(try atLimit.callOne("ping").error == nil)

        // One byte over: RequestTooLarge, then the connection is closed.
        let over = try daemon.client()
        try over.send("ping\n" + ping + " \n")
        #expect(try over.readReply().error == nil)
        let refused = try over.readReply()
        #expect(refused.error == .requestTooLarge)
        #expect(refused.message?.isEmpty == false)
        let rest = over.readUntilClosed()
        #expect(rest.closed)
        #expect(rest.lines.isEmpty, "replies after RequestTooLarge: \(rest.lines)")

        // Bytes after the oversized line, in the same write, are not served either.
        let smuggler = try daemon.client()
        try smuggler.send(ping + " \n" + "switch smuggled")
        smuggler.finishSending()
        #expect(try smuggler.readReply().error == .requestTooLarge)
        let after = smuggler.readUntilClosed()
        #expect(after.closed)
        let smuggled = FileManager.default.fileExists(atPath: daemon.accountPath("smuggled"))
        #expect(after.lines.isEmpty, "replies after RequestTooLarge: \(after.lines)")
        #expect(!smuggled, "the request after the oversized line was executed")

        // A big JSON request with no newline yet: refused as soon as it is too long.
        let big = try daemon.client()
        try big.send(#"{"method":"io.accountd.Status","parameters":{"account":""# + String(repeating: "x", count: 20_000))
        let bigReply = try big.readReply()
        #expect(bigReply.error == .requestTooLarge)
        #expect(big.readUntilClosed().closed)

        #expect(daemon.log.contains("4096"))
        try Self.expectAlive(daemon)
    }

    @Test func damagedAccountFilesAreRefusedAndLeftUntouched() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try daemon.client()
        let accounts = daemon.dataRoot + "/accounts/"
        var random = SeededRandom(seed: 0xBAD_F11E)

        // A real account with enough rows for many pages, then truncated.
        #expect(try client.callOne("switch trunc").error == nil)
        try E2E.sql(
            daemon.accountPath("trunc"),
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000) INSERT INTO user_info(user_id, user_name, age) SELECT i, printf('user %d %s', i, hex(randomblob(20))), i % 90 FROM c;")
        #expect(try client.callOne("switch bob").error == nil)
        #expect(try client.callOne("switch good").error == nil)

        let trunc = try #require(Files.bytes(accounts + "trunc.sqlite"))
        #expect(trunc.count > 100_000)
        try trunc.prefix(trunc.count / 2).write(to: URL(fileURLWithPath: accounts + "trunc.sqlite"))
        try trunc.prefix(4096 + 100).write(to: URL(fileURLWithPath: accounts + "trunc-page.sqlite"))
        try trunc.prefix(50).write(to: URL(fileURLWithPath: accounts + "trunc-header.sqlite"))
        try Data(random.bytes(16384)).write(to: URL(fileURLWithPath: accounts + "garbage.sqlite"))
        try Data(Array("SQLite format 3\0".utf8) + random.bytes(16384)).write(to: URL(fileURLWithPath: accounts + "garbage-header.sqlite"))
        try Data().write(to: URL(fileURLWithPath: accounts + "empty.sqlite"))
        try E2E.sql(accounts + "foreign.sqlite", "CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        try E2E.sql(accounts + "foreign-wal.sqlite", "PRAGMA journal_mode=WAL; PRAGMA application_id=1633903476; CREATE TABLE accountd_meta(key, value);")
        try FileManager.default.copyItem(atPath: accounts + "bob.sqlite", toPath: accounts + "copied.sqlite")
        try E2E.makeTooNewAccount("future", dataRoot: daemon.dataRoot, bundle: Repository.sampleBundle, in: dir)

        let damaged: [(String, ErrorName, String)] = [
            ("trunc", .accountCorrupt, "corrupt"), ("trunc-page", .accountCorrupt, "corrupt"),
            ("trunc-header", .accountCorrupt, "corrupt"), ("garbage", .accountCorrupt, "corrupt"),
            ("garbage-header", .accountCorrupt, "corrupt"), ("empty", .accountCorrupt, "corrupt"),
            ("foreign", .accountCorrupt, "corrupt"), ("foreign-wal", .accountCorrupt, "corrupt"),
            ("copied", .accountCorrupt, "corrupt"), ("future", .accountTooNew, "too_new"),
        ]
        let filesBefore = Set(try FileManager.default.contentsOfDirectory(atPath: accounts))
        var bytes: [String: Data] = [:]
        var leftovers: [String] = []
        for (name, _, _) in damaged { bytes[name] = Files.bytes(accounts + name + ".sqlite") }

        for (name, error, state) in damaged {
            for request in ["switch \(name)", #"{"method":"io.accountd.Switch","parameters":{"account":"\#(name)","create":false},"more":true}"#] {
                let reply = try client.callOne(request)
                #expect(reply.error == error, "\(request) -> \(reply.error?.rawValue ?? "success") \(reply.parameters)")
                #expect(reply.parameters["account"] == .string(name))
                #expect(reply.message?.isEmpty == false)
            }
            let status = try client.callOne("status \(name)")
            #expect(status.error == nil)
            #expect(status.parameters["state"] == .string(state), "\(name): \(status.parameters)")
            // Refusing a file must not leave anything beside it either.
            for suffix in ["-wal", "-shm", "-journal"] where !filesBefore.contains(name + ".sqlite" + suffix) {
                if FileManager.default.fileExists(atPath: accounts + name + ".sqlite" + suffix) { leftovers.append(name + ".sqlite" + suffix) }
            }
            let verify = try client.callOne("verify \(name)")
            #expect(verify.error != nil || verify.parameters["healthy"] == false, "verify \(name): \(verify.parameters)")
            let exported = try client.call(#"{"method":"io.accountd.Export","parameters":{"account":"\#(name)","format":"sql"},"more":true}"#)
            let exportError = exported.last?.error
            if ["empty", "foreign", "foreign-wal", "copied"].contains(name) {
                // Not this account's data: refused like Switch refuses it.
                #expect(exportError == .accountCorrupt, "export \(name): \(exported.last?.parameters ?? .null)")
            } else if name != "future" {
                #expect(exportError != nil, "export \(name) succeeded")
            }
            #expect(Files.bytes(accounts + name + ".sqlite") == bytes[name], "\(name).sqlite changed")
            // A failed switch leaves the previous account active.
            #expect(try client.callOne("status").parameters["active"] == "good")
        }
        let migrate = try client.callOne(#"{"method":"io.accountd.Migrate","parameters":{"all":true}}"#)
        #expect(migrate.parameters["failed"]?.intValue == Int64(damaged.count))
        for (name, _, _) in damaged {
            #expect(Files.bytes(accounts + name + ".sqlite") == bytes[name], "\(name).sqlite changed after Migrate")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.dataRoot + "/snapshots").filter { !["bob", "good", "trunc"].contains($0) } == [])
        #expect(leftovers == [])
        try Self.expectAlive(daemon)
    }
}
