import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SPEC section 12: `Switch`'s reply carries `path`, the account file's absolute path, on
/// the line socket, on the varlink socket and in `accountctl switch` (text and `--json`), so
/// an app running as the daemon's own user can open the file itself (docs/APPS.md).
@Suite struct SwitchPathTests {
    /// One varlink call: the request NUL-terminated, the reply read up to its NUL.
    static func varlinkCall(_ socket: String, _ request: String) throws -> JSONValue {
        let client = try RawClient(socket: socket)
        try client.send(Array(request.utf8) + [0])
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !bytes.contains(0) {
            let count = recv(client.fd, &buffer, buffer.count, 0)
            try #require(count > 0, "the varlink socket closed before a reply: \(String(decoding: bytes, as: UTF8.self))")
            bytes += buffer[0..<count]
        }
        return try JSONParser.parse(String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self))
    }

    @Test func switchNamesTheAccountFileOnBothSocketsAndInAccountctl() throws {
        let dir = TestDirectory()
        // A data root spelled with `.` and `..`: the reply's path is absolute and plain all the same.
        try FileManager.default.createDirectory(atPath: dir.sub("elsewhere"), withIntermediateDirectories: true)
        let daemon = try DaemonProcess(directory: dir.path, arguments: ["--data-root", dir.sub("elsewhere/./../data")])
        let expected = dir.path + "/data/accounts/"

        // Line protocol: created, then opened; each names the file the daemon made.
        let created = try daemon.client().callOne(#"{"method":"io.accountd.Switch","parameters":{"account":"alice"}}"#)
        #expect(created.error == nil, "\(created)")
        #expect(created.parameters["action"] == "created")
        #expect(created.parameters["path"] == .string(expected + "alice.sqlite"), "\(created)")
        #expect(try E2E.userVersion(expected + "alice.sqlite") == 3, "the file at path is the account, at the bundle's version")
        #expect(try daemon.client().callOne("switch alice").parameters["path"] == .string(expected + "alice.sqlite"))

        // varlink, on the socket beside the line socket.
        let varlink = URL(fileURLWithPath: daemon.socket).deletingLastPathComponent().path + "/io.accountd"
        let reply = try Self.varlinkCall(varlink, #"{"method":"io.accountd.Switch","parameters":{"account":"bob"}}"#)
        #expect(reply["error"] == nil, "\(reply.serialized())")
        #expect(reply["parameters"]?["path"] == .string(expected + "bob.sqlite"), "\(reply.serialized())")
        #expect(FileManager.default.fileExists(atPath: expected + "bob.sqlite"))

        // accountctl: the last line of the text says where the file is; --json carries path.
        let text = try E2E.accountctl(["switch", "carol"], socket: daemon.socket)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.hasSuffix("File: \(expected)carol.sqlite\n"), "\(text.stdout)")
        let json = try E2E.accountctl(["--json", "switch", "alice"], socket: daemon.socket)
        #expect(json.status == 0, "\(json.stderr)")
        #expect(try E2E.jsonLines(json.stdout).last?["path"] == .string(expected + "alice.sqlite"), "\(json.stdout)")
        #expect(E2E.stop(daemon, timeout: 30) == 0)
    }
}
