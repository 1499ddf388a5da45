import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `make install DESTDIR=... PREFIX=/usr` puts the programs, every unit, the man pages, the
/// sysusers file, the config and the sample bundle where they belong, and what it installs
/// agrees with itself: the config and the program's default name the bundle where it went, the
/// units run the installed program, and their `Documentation=` man pages are installed.
///
/// `PROGRAMS=` hands it the programs the tests run, so it builds nothing (a release build
/// here would take many minutes, and `swift test` holds `.build`'s lock).
@Suite struct InstallTests {
    static let systemUnits = [
        "accountd.service", "accountd.socket", "accountd-varlink.socket", "accountd@.service", "accountd@.socket",
        "accountd-varlink@.socket", "accountd-metrics.service", "accountd-metrics.timer", "accountd-litestream.service",
    ]
    static let userUnits = ["accountd.service", "accountd.socket", "accountd-varlink.socket"]

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/make"), "needs /usr/bin/make"))
    func makeInstallPutsEverythingWhereTheConfigAndUnitsSayItIs() throws {
        let dir = TestDirectory()
        let dest = dir.sub("dest")
        let made = try E2E.run(
            "/usr/bin/make", ["-C", Repository.root, "--no-print-directory", "install", "DESTDIR=\(dest)", "PREFIX=/usr", "PROGRAMS=\(Binaries.directory)"])
        try #require(made.status == 0, "make install failed:\n\(made.stdout)\n\(made.stderr)")

        var expected = ["/usr/bin/accountd", "/usr/bin/accountctl", "/usr/lib/sysusers.d/accountd.conf", "/etc/accountd/accountd.yaml"]
        expected += Self.systemUnits.map { "/usr/lib/systemd/system/" + $0 }
        expected += Self.userUnits.map { "/usr/lib/systemd/user/" + $0 }
        expected += ["/usr/share/man/man8/accountd.8", "/usr/share/man/man1/accountctl.1", "/usr/share/accountd/schema/schema.sql"]
        let migrations = try FileManager.default.contentsOfDirectory(atPath: Repository.sampleBundle + "/migrations").filter { $0.hasSuffix(".sql") }
        expected += migrations.map { "/usr/share/accountd/schema/migrations/" + $0 }
        for path in expected {
            #expect(FileManager.default.fileExists(atPath: dest + path), "make install did not install \(path)")
        }
        #expect(FileManager.default.isExecutableFile(atPath: dest + "/usr/bin/accountd"))

        // Every unit is rendered: no placeholder left, and each runs the installed program.
        for path in expected where path.contains("/systemd/") {
            let text = try String(contentsOfFile: dest + path, encoding: .utf8)
            #expect(!text.contains("@BINDIR@") && !text.contains("@LITESTREAM@"), "\(path) still has a placeholder")
            for line in text.split(separator: "\n") where line.hasPrefix("ExecStart=") && path.contains("/accountd") && !path.contains("litestream") {
                #expect(line.contains("/usr/bin/accountd") || line.contains("/usr/bin/accountctl"), "\(path): \(line)")
            }
            if path.hasSuffix(".service") || path.hasSuffix(".socket") {
                #expect(text.contains("man:accountd(8)") && text.contains("man:accountctl(1)"), "\(path) does not name both man pages")
            }
        }

        // The config names the bundle where make install put it.
        let config = try String(contentsOfFile: dest + "/etc/accountd/accountd.yaml", encoding: .utf8)
        let schemaDir = config.split(separator: "\n").first { $0.hasPrefix("  dir: ") }.map { String($0.dropFirst("  dir: ".count)) }
        #expect(schemaDir == "/usr/share/accountd/schema", "\(schemaDir ?? "no schema.dir")")
        #expect(FileManager.default.fileExists(atPath: dest + (schemaDir ?? "/nowhere") + "/migrations/" + (migrations.first ?? "x")))

        // The installed program, given no bundle, finds the one installed beside it
        // (DESTDIR/usr/bin/accountd -> DESTDIR/usr/share/accountd/schema).
        try Files.write("{}\n", to: dir.sub("none.yaml"))
        let log = dir.sub("installed.log")
        let installed = try SystemdSupport.start(
            dest + "/usr/bin/accountd", ["--data-root", dir.sub("data"), "--socket", dir.sub("s.sock"), "--config", dir.sub("none.yaml")],
            environment: ["PATH": "/usr/bin:/bin"], log: log)
        defer { if installed.isRunning { kill(installed.processIdentifier, SIGKILL); installed.waitUntilExit() } }
        #expect(waitUntil(timeout: 30) { (try? RawClient(socket: dir.sub("s.sock")).callOne("ping")).map { $0.error == nil } ?? false }, "\(SystemdSupport.tail(log))")
        let info = try RawClient(socket: dir.sub("s.sock")).callOne("info")
        #expect(info.parameters["bundle"]?["version"] == .int(Int64(migrations.count)), "\(info) \(SystemdSupport.tail(log))")
        #expect(SystemdSupport.stop(installed, timeout: 30).status == 0)

        // man finds the installed pages; systemd-analyze checks each unit's Documentation=
        // man pages against them (with the units rendered for the programs the tests run).
        let manpath = dest + "/usr/share/man"
        for (name, page) in [("accountd", "man8/accountd.8"), ("accountctl", "man1/accountctl.1")] {
            let found = try E2E.run("/usr/bin/man", ["-w", name], environment: ["MANPATH": manpath])
            #expect(found.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == manpath + "/" + page, "\(found)")
        }
        if UnitFile.canVerify {
            for name in ["accountd.service.in", "accountd.socket", "accountd-varlink.socket", "accountd@.service.in", "accountd@.socket", "accountd-varlink@.socket"] {
                _ = try UnitFile.render(name, into: dir.sub("units"))
            }
            let units = ["accountd.service", "accountd.socket", "accountd-varlink.socket", "accountd@notes.service"].map { dir.sub("units/" + $0) }
            let verified = try UnitFile.verify(units, man: true, environment: ["MANPATH": manpath])
            #expect(verified.stderr == "", "\(verified.stderr)")
            let withoutPages = try UnitFile.verify(units, man: true, environment: ["MANPATH": dir.sub("empty")])
            #expect(withoutPages.stderr.contains("man accountd(8)"), "the check has teeth: \(withoutPages.stderr)")
        }
    }
}
