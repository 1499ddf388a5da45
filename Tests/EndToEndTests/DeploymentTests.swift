import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The units an app developer deploys with (docs/APPS.md): the template `accountd@APP`, one
/// daemon per app, and the per-user unit for `systemctl --user`. systemd may not be PID 1
/// here, so each unit is checked with `systemd-analyze verify`, then its own `ExecStart=` is
/// run with the directories systemd would give it, answering where its socket units listen.
@Suite struct DeploymentTests {
    static let templateUnits = ["accountd@.service.in", "accountd@.socket", "accountd-varlink@.socket"]
    static let userUnits = ["user/accountd.service.in", "user/accountd.socket", "user/accountd-varlink.socket"]

    @Test(.enabled(if: UnitFile.canVerify, "needs /usr/bin/systemd-analyze"))
    func theTemplateAndTheUserUnitsVerify() throws {
        let dir = TestDirectory()
        for name in Self.templateUnits { _ = try UnitFile.render(name, into: dir.sub("system")) }
        // Instances of the template, found beside it as systemd finds them.
        let instances = ["accountd@notes.service", "accountd@notes.socket", "accountd-varlink@notes.socket", "accountd@music.service"]
        let system = try UnitFile.verify(instances.map { dir.sub("system/" + $0) })
        #expect(system.stderr == "", "systemd-analyze verify complained:\n\(system.stderr)")
        #expect(system.status == 0)

        for name in Self.userUnits { _ = try UnitFile.render(name, into: dir.sub("user")) }
        try FileManager.default.createDirectory(atPath: dir.sub("xdg-runtime"), withIntermediateDirectories: true)
        let user = try UnitFile.verify(
            ["accountd.service", "accountd.socket", "accountd-varlink.socket"].map { dir.sub("user/" + $0) }, user: true, runtime: dir.sub("xdg-runtime"))
        #expect(user.stderr == "", "systemd-analyze --user verify complained:\n\(user.stderr)")
        #expect(user.status == 0)

        // The check has teeth: an ExecStart= naming no program is reported, for both.
        _ = try UnitFile.render("accountd@.service.in", into: dir.sub("broken"), bindir: dir.sub("no-such-bindir"))
        for name in ["accountd@.socket", "accountd-varlink@.socket"] { _ = try UnitFile.render(name, into: dir.sub("broken")) }
        #expect(try UnitFile.verify([dir.sub("broken/accountd@notes.service")]).stderr.contains("no-such-bindir/accountd"))
        let brokenUser = try UnitFile.render("user/accountd.service.in", into: dir.sub("broken-user"), bindir: dir.sub("no-such-bindir"))
        for name in ["user/accountd.socket", "user/accountd-varlink.socket"] { _ = try UnitFile.render(name, into: dir.sub("broken-user")) }
        #expect(try UnitFile.verify([brokenUser.path], user: true, runtime: dir.sub("xdg-runtime")).stderr.contains("no-such-bindir/accountd"))
    }

    /// Two instances of `accountd@.service`, notes and music, each with its own bundle,
    /// (A short name: the test folder is named after it, and a Unix socket path is at most 107 bytes.)
    /// config, data root and sockets, run side by side: neither sees the other's accounts.
    @Test func templateInstancesKeepApart() throws {
        let dir = TestDirectory()
        let service = try UnitFile.render("accountd@.service.in", into: dir.sub("units"))
        let lineSocket = try UnitFile.render("accountd@.socket", into: dir.sub("units"))
        let varlinkSocket = try UnitFile.render("accountd-varlink@.socket", into: dir.sub("units"))
        #expect(try varlinkSocket.value("FileDescriptorName") == "varlink")
        #expect(lineSocket.values("FileDescriptorName").isEmpty, "the line socket goes by its unit's name")
        let roots = try UnitFile.Roots(under: dir.path)
        try FileManager.default.createDirectory(atPath: roots.configuration + "/accountd", withIntermediateDirectories: true)
        // music ships version 1 of its schema; notes version 3.
        let musicBundle = try BundleFixture.truncate(Repository.sampleBundle, at: 1, into: dir.sub("music-bundle"))
        let bundles = ["notes": Repository.sampleBundle, "music": musicBundle]

        var daemons: [String: ActivatedDaemon] = [:]
        for (app, bundle) in bundles.sorted(by: { $0.key < $1.key }) {
            let other = app == "notes" ? "music" : "notes"
            // A config copied from another app's: its data.root names the other instance's root.
            // The unit's --data-root wins, so the copy cannot make two apps share one.
            try Files.write(
                "schema:\n  dir: \(bundle)\ndata:\n  root: \(roots.state)/accountd-apps/\(other)\n", to: roots.configuration + "/accountd/\(app).yaml")
            let state = roots.state + "/accountd-apps/" + app
            let runtime = roots.runtime + "/accountd-apps/" + app
            for path in [state, runtime] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
            let command = UnitFile.expand(try service.value("ExecStart"), instance: app, roots: roots).split(separator: " ").map(String.init)
            #expect(command.first == Binaries.accountd)
            daemons[app] = try ActivatedDaemon(
                command: command,
                line: UnitFile.expand(try lineSocket.value("ListenStream"), instance: app, roots: roots),
                varlink: UnitFile.expand(try varlinkSocket.value("ListenStream"), instance: app, roots: roots),
                environment: ["STATE_DIRECTORY": state, "RUNTIME_DIRECTORY": runtime, "CONFIGURATION_DIRECTORY": roots.configuration + "/accountd"],
                log: dir.sub("\(app).log"))
        }
        let notes = try #require(daemons["notes"])
        let music = try #require(daemons["music"])
        #expect(notes.line == roots.runtime + "/accountd-apps/notes/accountd.sock" && music.varlink == roots.runtime + "/accountd-apps/music/io.accountd")

        // Each serves its own data root and bundle, on both its sockets.
        for (app, daemon, version) in [("notes", notes, 3), ("music", music, 1)] {
            let info = try daemon.client().callOne("info").parameters
            #expect(info["dataRoot"] == .string(roots.state + "/accountd-apps/" + app), "\(info.serialized()) \(SystemdSupport.tail(daemon.log))")
            #expect(info["bundle"]?["version"] == .int(Int64(version)))
            let overVarlink = try SwitchPathTests.varlinkCall(daemon.varlink, #"{"method":"io.accountd.Info"}"#)
            #expect(overVarlink["parameters"]?["dataRoot"] == info["dataRoot"], "\(overVarlink.serialized())")
        }

        // alice uses notes, bob uses music.
        let alice = try notes.client().callOne("switch alice")
        #expect(alice.parameters["path"] == .string(roots.state + "/accountd-apps/notes/accounts/alice.sqlite"), "\(alice)")
        #expect(alice.parameters["version"] == 3)
        let bob = try music.client().callOne("switch bob")
        #expect(bob.parameters["path"] == .string(roots.state + "/accountd-apps/music/accounts/bob.sqlite"), "\(bob)")
        #expect(bob.parameters["version"] == 1)
        let inserted = try notes.client().callOne(
            #"{"method":"io.accountd.Execute","parameters":{"statements":[{"sql":"INSERT INTO user_info(user_id, user_name) VALUES (1, 'Ann')"}]}}"#)
        #expect(inserted.error == nil, "\(inserted)")

        // Neither sees the other's accounts, files or active account.
        #expect(try notes.client().call("list").compactMap { $0.parameters["account"]?.stringValue } == ["alice"])
        #expect(try music.client().call("list").compactMap { $0.parameters["account"]?.stringValue } == ["bob"])
        #expect(try music.client().callOne("status alice").parameters["exists"] == false)
        #expect(try music.client().callOne("status").parameters["active"] == "bob")
        #expect(try notes.client().callOne("status").parameters["active"] == "alice")
        let rows = try notes.client().callOne(#"{"method":"io.accountd.Query","parameters":{"sql":"SELECT user_name FROM user_info"}}"#)
        #expect(rows.parameters["rows"] == [["Ann"]], "\(rows)")
        #expect(!FileManager.default.fileExists(atPath: roots.state + "/accountd-apps/music/accounts/alice.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: roots.state + "/accountd-apps/notes/accounts/bob.sqlite"))

        for daemon in [music, notes] { #expect(daemon.stop() == 0, "\(SystemdSupport.tail(daemon.log))") }
    }

    /// The per-user unit's command line, run as a user who is not root (uid 65534) with the
    /// directories `systemctl --user` gives it: that user is the daemon's own, so it may
    /// switch, and its app opens the account file itself at the path Switch returns.
    @Test(.enabled(if: getuid() == 0, "needs root, to run as uid 65534"))
    func theUserUnitRunsAsItsUserAndItsAppOpensTheFileItself() throws {
        let dir = TestDirectory()
        let uid = 65534
        let service = try UnitFile.render("user/accountd.service.in", into: dir.sub("units"))
        let lineSocket = try UnitFile.render("user/accountd.socket", into: dir.sub("units"))
        let varlinkSocket = try UnitFile.render("user/accountd-varlink.socket", into: dir.sub("units"))
        let roots = try UnitFile.Roots(under: dir.sub("home"))
        // What systemd makes for StateDirectory=, ConfigurationDirectory= and RuntimeDirectory=
        // accountd under a user manager: folders of the user's own.
        let state = roots.state + "/accountd"
        let configuration = roots.configuration + "/accountd"
        let runtime = roots.runtime + "/accountd"
        for path in [dir.sub("home"), roots.state, roots.configuration, roots.runtime, state, configuration, runtime] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            #expect(chown(path, uid_t(uid), gid_t(uid)) == 0 && chmod(path, 0o700) == 0)
        }
        // The app's settings: its bundle (the unit names none).
        try Files.write("schema:\n  dir: \(Repository.sampleBundle)\n", to: configuration + "/accountd.yaml")
        let command = UnitFile.expand(try service.value("ExecStart"), roots: roots).split(separator: " ").map(String.init)
        #expect(command == [Binaries.accountd], "the user unit takes every setting from its directories and its config")
        let daemon = try ActivatedDaemon(
            command: command, line: UnitFile.expand(try lineSocket.value("ListenStream"), roots: roots),
            varlink: UnitFile.expand(try varlinkSocket.value("ListenStream"), roots: roots),
            environment: ["STATE_DIRECTORY": state, "RUNTIME_DIRECTORY": runtime, "CONFIGURATION_DIRECTORY": configuration, "HOME": dir.sub("home")],
            log: dir.sub("accountd.log"), asUID: uid)
        #expect(daemon.line == runtime + "/accountd.sock")

        // The user's own accountctl may switch (the daemon's own uid is an admin) and learns the path.
        let switched = try SystemdSupport.run(asUID: uid, Binaries.accountctl, ["--socket", daemon.line, "--json", "switch", "alice"])
        #expect(switched.status == 0, "\(switched.stderr) \(SystemdSupport.tail(daemon.log))")
        let reply = try #require(try E2E.jsonLines(switched.stdout).last)
        let path = try #require(reply["path"]?.stringValue)
        #expect(path == state + "/accounts/alice.sqlite")
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_uid == uid && info.st_mode & 0o777 == 0o600, "the file is the user's, 0600")

        // The app opens the file itself, as the user: reads the version, writes a row.
        let sqlite = "/usr/bin/sqlite3"
        let version = try SystemdSupport.run(asUID: uid, sqlite, [path, "PRAGMA user_version;"])
        #expect(version.status == 0 && version.stdout == "3\n", "\(version)")
        let written = try SystemdSupport.run(asUID: uid, sqlite, [path, "PRAGMA busy_timeout=5000; INSERT INTO user_info(user_id, user_name) VALUES (7, 'Cy');"])
        #expect(written.status == 0, "\(written.stderr)")
        // ... and the daemon sees what the app wrote.
        let query = try SystemdSupport.run(asUID: uid, Binaries.accountctl, ["--socket", daemon.line, "--json", "query", "SELECT user_name FROM user_info"])
        #expect(query.status == 0 && query.stdout.contains("Cy"), "\(query.stdout) \(query.stderr)")
        // Another user may not open it.
        let other = try SystemdSupport.run(asUID: 65533, sqlite, [path, "SELECT count(*) FROM user_info;"])
        #expect(other.status != 0, "\(other)")
        #expect(daemon.stop() == 0, "\(SystemdSupport.tail(daemon.log))")
    }
}
