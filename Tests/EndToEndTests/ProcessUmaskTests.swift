import AccountdTestSupport
import Foundation
import Testing

/// hostile33e #2: the daemon's umask stays 0077 whatever its sockets' mode. Binding the
/// line and varlink sockets used to set the umask for each and put it back, both at once,
/// which left 0117 in some starts: folders made 0700 then came out 0600, and a non-root
/// daemon's every `pull` and `restore --at` failed.
@Suite struct ProcessUmaskTests {
    @Test func theUmaskIsTheDaemonsAfterItsSocketsAreBound() throws {
        let dir = TestDirectory()
        let config = dir.sub("wide.yaml")
        try Files.write("socket:\n  mode: \"0666\"\n", to: config)
        for start in 0..<6 {
            let run = dir.sub("run\(start)")
            try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
            let daemon = try E2E.spawning {
                try DaemonProcess(directory: run, arguments: ["--config", config, "--varlink-socket", run + "/varlink.sock"])
            }
            defer { _ = E2E.stop(daemon) }
            let status = try String(contentsOfFile: "/proc/\(daemon.process.processIdentifier)/status", encoding: .utf8)
            let umask = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }.map { $0.dropFirst(6).trimmingCharacters(in: .whitespaces) }
            #expect(umask == "0077", "start \(start): \(umask ?? "no Umask line")")
            var info = stat()
            #expect(stat(daemon.socket, &info) == 0 && info.st_mode & 0o777 == 0o666, "start \(start): the socket's mode")
        }
    }
}
