import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Preference calls follow Switch's decision table: a file Switch refuses is refused by
/// Get, Keys, Set and Delete too, and left exactly as it was; a file the bundle may use
/// takes them, and reads never write.
@Suite struct PreferenceFileTests {
    /// An account file that Switch refuses, and the error it gets.
    enum Refused: String, CaseIterable, CustomTestStringConvertible {
        case missing, garbage, foreignApplicationID, boundToAnotherAccount, tooNew

        var error: ErrorName {
            switch self {
            case .missing: .accountNotFound
            case .garbage, .foreignApplicationID, .boundToAnotherAccount: .accountCorrupt
            case .tooNew: .accountTooNew
            }
        }

        var testDescription: String { rawValue }

        /// Puts the file in place for account `rawValue` under `dataRoot`; the daemon's bundle is at version 1.
        func make(dataRoot: String, in dir: borrowing TestDirectory) throws {
            let accounts = dataRoot + "/accounts/"
            try FileManager.default.createDirectory(atPath: accounts, withIntermediateDirectories: true)
            let path = accounts + rawValue + ".sqlite"
            switch self {
            case .missing:
                break
            case .garbage:
                var random = SeededRandom(seed: 11)
                try Data(random.bytes(8192)).write(to: URL(fileURLWithPath: path))
            case .foreignApplicationID:
                // In WAL mode, as an app's own database would be: opening it makes -wal and -shm.
                try E2E.sql(
                    path, "PRAGMA journal_mode=WAL; PRAGMA application_id=1234; CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);")
            case .boundToAnotherAccount:
                let other = dir.sub("other-root")
                try E2E.createOffline("alice", dataRoot: other, bundle: try PreferenceFileTests.bundle(1, dir))
                try FileManager.default.copyItem(atPath: other + "/accounts/alice.sqlite", toPath: path)
            case .tooNew:
                // Version 3, readable only by a bundle at 3: the finding's file.
                let other = dir.sub("newer-root")
                try E2E.createOffline(rawValue, dataRoot: other, bundle: Repository.sampleBundle)
                try FileManager.default.copyItem(atPath: other + "/accounts/\(rawValue).sqlite", toPath: path)
            }
        }
    }

    /// The sample bundle cut at `version`, once per test directory.
    static func bundle(_ version: Int, _ dir: borrowing TestDirectory) throws -> String {
        let path = dir.sub("bundle-v\(version)")
        if FileManager.default.fileExists(atPath: path + "/migrations") { return path }
        return try BundleFixture.truncate(Repository.sampleBundle, at: version, into: path)
    }

    /// The four preference calls on `account` in the per-account namespace `user`.
    static func calls(_ account: String) -> [(name: String, line: String)] {
        func request(_ method: AccountdProtocol.Method, _ extra: [(String, JSONValue)]) -> String {
            Request(method: method, parameters: Parameters([("namespace", "user"), ("account", .string(account))] + extra)).encoded()
        }
        return [
            ("Get", request(.get, [("key", "theme")])), ("Keys", request(.keys, [])),
            ("Set", request(.set, [("key", "theme"), ("value", "dark")])), ("Delete", request(.delete, [("key", "theme")])),
        ]
    }

    /// What is in the accounts folder for `account`: the file's bytes (nil if missing) and which companions exist.
    static func footprint(_ dataRoot: String, _ account: String) -> (bytes: Data?, companions: [String]) {
        let path = dataRoot + "/accounts/\(account).sqlite"
        return (Files.bytes(path), ["-wal", "-shm", "-journal"].filter { FileManager.default.fileExists(atPath: path + $0) })
    }

    @Test(arguments: Refused.allCases)
    func refusedFilesAreRefusedByEveryCallAndLeftAsTheyWere(_ kind: Refused) throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        try kind.make(dataRoot: dataRoot, in: dir)
        let before = Self.footprint(dataRoot, kind.rawValue)
        #expect(before.companions == [])
        let daemon = try E2E.daemon(directory: dir.path, bundle: try Self.bundle(1, dir))
        let client = try daemon.client()
        // With an active account, so that nothing falls back to it.
        #expect(try client.callOne("switch bob").error == nil)

        // Twice: the second round meets whatever the first one left open or cached.
        for round in 1...2 {
            for (name, line) in Self.calls(kind.rawValue) {
                let reply = try client.callOne(line)
                #expect(reply.error == kind.error, "round \(round), \(name): \(reply.error?.rawValue ?? "success") \(reply.message ?? "")")
                #expect(reply.parameters["account"] == .string(kind.rawValue), "\(name)")
                let now = Self.footprint(dataRoot, kind.rawValue)
                #expect(now.bytes == before.bytes, "round \(round), \(name) changed the file")
                #expect(now.companions == [], "round \(round), \(name) left \(now.companions)")
            }
        }
        // Switch refuses the file too, and leaves it as it was.
        if kind != .missing {
            #expect(try client.callOne("switch \(kind.rawValue)").error == kind.error)
            #expect(E2E.stop(daemon) == 0)
            let after = Self.footprint(dataRoot, kind.rawValue)
            #expect(after.bytes == before.bytes, "the file changed by the time the daemon stopped")
            #expect(after.companions == [])
        }
    }

    /// A usable file without `accountd_prefs`, at each version the bundle may use as it is.
    enum Usable: String, CaseIterable, CustomTestStringConvertible {
        case current, outdated, compatibleNewer

        var testDescription: String { rawValue }
        /// The file's version; the daemon's bundle is at 2.
        var version: Int { [.current: 2, .outdated: 1, .compatibleNewer: 3][self]! }
        var state: String { [.current: "current", .outdated: "outdated", .compatibleNewer: "compatible_newer"][self]! }
    }

    /// Get and Keys on a file without `accountd_prefs` create nothing; Set and Delete work in
    /// every usable file, creating the table and changing neither version.
    @Test(arguments: Usable.allCases)
    func usableFilesAreReadWithoutWritesAndTakeWrites(_ kind: Usable) throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        // Bundles at 1, 2, and 3 whose step 3 is readable by 2.
        let three = dir.sub("bundle-compatible")
        try BundleFixture.write(
            at: three, steps: [E2E.sampleSteps[0], E2E.sampleSteps[1], "-- accountd: readable-by 2\n" + E2E.sampleSteps[2]])
        let bundles = [try Self.bundle(1, dir), try Self.bundle(2, dir), three]
        try E2E.createOffline("alice", dataRoot: dataRoot, bundle: bundles[kind.version - 1])
        let path = dataRoot + "/accounts/alice.sqlite"
        let before = Self.footprint(dataRoot, "alice")
        #expect(before.companions == [])
        #expect(try E2E.sql(path, "SELECT count(*) FROM sqlite_master WHERE name = 'accountd_prefs';") == "0")

        let daemon = try E2E.daemon(directory: dir.path, bundle: bundles[1])
        let client = try daemon.client()
        #expect(try client.callOne("status alice").parameters["state"] == .string(kind.state))
        let calls = Self.calls("alice")
        for _ in 1...2 {
            let get = try client.callOne(calls[0].line)
            #expect(get.error == .keyNotFound, "\(get.message ?? "")")
            let keys = try client.callOne(calls[1].line)
            #expect(keys.parameters["keys"] == [], "\(keys.message ?? "")")
            let now = Self.footprint(dataRoot, "alice")
            #expect(now.bytes == before.bytes, "a read changed the file")
            #expect(now.companions == [], "a read left \(now.companions)")
        }
        #expect(try E2E.sql(path, "SELECT count(*) FROM sqlite_master WHERE name = 'accountd_prefs';") == "0")

        // Writes: the table comes with the first Set; the versions stay.
        #expect(try client.callOne(calls[2].line).error == nil)
        #expect(try client.callOne(calls[0].line).parameters["value"] == "dark")
        #expect(try client.callOne(calls[1].line).parameters["keys"] == ["theme"])
        #expect(try client.callOne(calls[3].line).error == nil)
        #expect(try client.callOne(calls[2].line).error == nil)
        #expect(E2E.stop(daemon) == 0)
        let facts = try E2E.sql(
            path,
            "SELECT (SELECT user_version FROM pragma_user_version), (SELECT value FROM accountd_meta WHERE key = 'last_compatible_version'), (SELECT group_concat(key || '=' || value) FROM accountd_prefs);"
        )
        let lastCompatible = kind == .compatibleNewer ? 2 : kind.version
        #expect(facts == "\(kind.version)|\(lastCompatible)|theme=\"dark\"")
        #expect(try E2E.sql(path, "PRAGMA integrity_check;") == "ok")

        // An outdated file's values come through its migration.
        if kind == .outdated {
            try daemon.restart()
            let again = try daemon.client()
            #expect(try again.callOne("switch alice").parameters["action"] == "migrated")
            #expect(try again.callOne("get user theme").parameters["value"] == "dark")
        }
    }

    /// An account whose table is open already is checked again when a reload brings a bundle
    /// with another target: one that makes its file too new refuses it from then on.
    @Test func aReloadThatMakesAnOpenAccountTooNewRefusesIt() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: E2E.sampleSteps)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        let client = try daemon.client()
        #expect(try client.callOne("switch carol").error == nil)
        #expect(try client.callOne("switch bob").error == nil)
        let calls = Self.calls("carol")
        #expect(try client.callOne(calls[2].line).error == nil)
        #expect(try client.callOne(calls[0].line).parameters["value"] == "dark")

        // The bundle goes back to version 2, which cannot read carol's version 3.
        let last = try FileManager.default.contentsOfDirectory(atPath: bundle + "/migrations").sorted().last!
        try FileManager.default.removeItem(atPath: bundle + "/migrations/" + last)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(
            waitUntil(timeout: 10) { (try? daemon.client().callOne("status"))?.parameters["bundleVersion"] == 2 },
            "\(daemon.log.suffix(2000))")
        for (name, line) in calls {
            let reply = try client.callOne(line)
            #expect(reply.error == .accountTooNew, "\(name): \(reply.error?.rawValue ?? "success") \(reply.message ?? "")")
        }
        // Its table was closed: nothing of the daemon's is left open on the file.
        let path = daemon.accountPath("carol")
        #expect(["-wal", "-shm"].filter { FileManager.default.fileExists(atPath: path + $0) } == [])
        #expect(try E2E.userVersion(path) == 3)
    }
}
