import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SPEC section 9: handed sockets, the daemon serves exactly those and binds none of its own.
@Suite(.enabled(
    if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate"), "needs /usr/bin/systemd-socket-activate"))
struct SocketActivationTests {
    /// Only the line socket, unnamed (`systemd-socket-activate -l PATH`, or a socket unit from
    /// before varlink): it is served, no varlink socket is bound (its folder does not even
    /// exist), and the log says what is served.
    @Test func servesOnlyTheUnnamedLineSocketItIsHanded() throws {
        let dir = TestDirectory()
        let line = dir.sub("x.sock")
        let own = dir.sub("own.sock")
        let varlink = dir.sub("missing/io.accountd")
        let log = dir.sub("accountd.log")
        try Files.write("{}\n", to: dir.sub("none.yaml"))
        let process = try SystemdSupport.start(
            "/usr/bin/systemd-socket-activate",
            [
                "-l", line, Binaries.accountd, "--data-root", dir.sub("data"), "--socket", own, "--varlink-socket", varlink,
                "--schema", Repository.sampleBundle, "--config", dir.sub("none.yaml"), "--log-level", "debug",
            ],
            environment: ["PATH": "/usr/bin:/bin"], log: log)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        // The socket's file appears at its bind, before its listen: connecting in between is refused.
        var first: RawClient?
        #expect(waitUntil(timeout: 10) { first = try? RawClient(socket: line); return first != nil }, "\(SystemdSupport.tail(log))")

        // The connection that wakes it up is answered, and so are the ones after.
        let client = try #require(first)
        let ping = try client.callOne("ping")
        #expect(ping.error == nil, "\(ping) \(SystemdSupport.tail(log))")
        #expect(try client.callOne("switch alice").parameters["action"] == "created")
        #expect(try RawClient(socket: line).callOne("status").parameters["active"] == "alice")
        #expect(process.isRunning, "\(SystemdSupport.tail(log))")

        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(
            text.contains("socket activation: systemd passed 1 socket(s) (fd 3 'unknown' at \(line)); serving the line protocol on them and binding no socket of its own"),
            "\(text)")
        #expect(text.contains("varlink is not served"), "\(text)")
        #expect(SystemdSupport.identity(of: own) == nil, "it bound --socket although it was handed one")
        #expect(!FileManager.default.fileExists(atPath: dir.sub("missing")))
        #expect(SystemdSupport.stop(process, timeout: 30).status == 0, "\(SystemdSupport.tail(log))")
    }

    /// Only the varlink socket: varlink is served on it, and the line socket is not bound.
    @Test func servesOnlyTheVarlinkSocketItIsHanded() throws {
        let dir = TestDirectory()
        let varlink = dir.sub("io.accountd")
        let own = dir.sub("own.sock")
        let log = dir.sub("accountd.log")
        try Files.write("{}\n", to: dir.sub("none.yaml"))
        let process = try SystemdSupport.start(
            "/usr/bin/systemd-socket-activate",
            [
                "-l", varlink, "--fdname=varlink", Binaries.accountd, "--data-root", dir.sub("data"), "--socket", own,
                "--varlink-socket", dir.sub("own-varlink"), "--schema", Repository.sampleBundle, "--config", dir.sub("none.yaml"),
            ],
            environment: ["PATH": "/usr/bin:/bin"], log: log)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        var first: RawClient?
        #expect(waitUntil(timeout: 10) { first = try? RawClient(socket: varlink); return first != nil }, "\(SystemdSupport.tail(log))")

        // A varlink call (NUL-terminated JSON) wakes it up and is answered.
        let client = try #require(first)
        try client.send(Array(#"{"method":"io.accountd.Ping"}"#.utf8) + [0])
        var reply: [UInt8] = []
        var byte: UInt8 = 0
        while recv(client.fd, &byte, 1, 0) == 1, byte != 0 { reply.append(byte) }
        #expect(String(decoding: reply, as: UTF8.self).contains("parameters"), "\(String(decoding: reply, as: UTF8.self)) \(SystemdSupport.tail(log))")

        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text.contains("serving varlink on them and binding no socket of its own; no line socket was passed"), "\(text)")
        #expect(SystemdSupport.identity(of: own) == nil && SystemdSupport.identity(of: dir.sub("own-varlink")) == nil)
        #expect(SystemdSupport.stop(process, timeout: 30).status == 0, "\(SystemdSupport.tail(log))")
    }
}
