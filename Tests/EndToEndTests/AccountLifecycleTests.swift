import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Snapshots on demand, restore that keeps what it restores, retention by age, and
/// removing or erasing an account: the real daemon and the real accountctl.
@Suite struct AccountLifecycleTests {
    /// The snapshots of `account` as `accountctl --json snapshots` lists them, newest first.
    static func snapshots(_ account: String, socket: String) throws -> [JSONValue] {
        let result = try E2E.accountctl(["--json", "snapshots", account], socket: socket)
        try #require(result.status == 0, "accountctl snapshots \(account): \(result.stderr)")
        return try E2E.jsonLines(result.stdout).first?["snapshots"]?.arrayValue ?? []
    }

    /// `PRAGMA journal_mode` of a file, as the sqlite3 shell reads it.
    static func journalMode(_ path: String) throws -> String { try E2E.sql(path, "PRAGMA journal_mode;") }

    /// Every file and folder under `root`, relative to it.
    static func tree(_ root: String) -> [String] {
        (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).sorted()
    }

    /// The files under `root` (relative) whose bytes contain `needle`.
    static func holders(of needle: String, under root: String) -> [String] {
        tree(root).filter { relative in
            Files.bytes(root + "/" + relative)?.range(of: Data(needle.utf8)) != nil
        }
    }

    /// An account created at version 1 and migrated twice (to 2 by one daemon, to 3 by the
    /// next), with `snapshotsToKeep` set to `keep`: the snapshots are v2's and, if kept, v1's.
    static func migratedTwice(keep: Int, in dir: borrowing TestDirectory) throws -> DaemonProcess {
        let bundles = (1...3).map { version in
            (try? BundleFixture.write(at: dir.sub("v\(version)"), steps: Array(E2E.sampleSteps.prefix(version)))) ?? ""
        }
        let environment = ["ACCOUNTD_ACCOUNTS_SNAPSHOTS_TO_KEEP": "\(keep)"]
        try E2E.createOffline("alice", dataRoot: dir.sub("data"), bundle: bundles[0])
        try E2E.sql(dir.sub("data/accounts/alice.sqlite"), "INSERT INTO user_info VALUES (1, 'Ann');")
        let first = try E2E.daemon(directory: dir.path, bundle: bundles[1], environment: environment)
        #expect(try first.client().callOne("migrate alice").error == nil)
        #expect(E2E.stop(first) == 0)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundles[2], environment: environment)
        #expect(try daemon.client().callOne("migrate alice").error == nil)
        #expect(try E2E.userVersion(daemon.accountPath("alice")) == 3)
        return daemon
    }

    /// Restoring a snapshot never loses it to the retention that follows the snapshot of
    /// the replaced file: with keep 2 the older of two, with keep 1 the only one.
    @Test(arguments: [(keep: 2, restoring: 1), (keep: 1, restoring: 2)])
    func restoreKeepsTheSnapshotItRestores(keep: Int, restoring version: Int) throws {
        let dir = TestDirectory()
        let daemon = try Self.migratedTwice(keep: keep, in: dir)
        let before = try Self.snapshots("alice", socket: daemon.socket)
        #expect(before.count == keep)
        let chosen = try #require(before.first { $0["version"] == JSONValue(version) }?["snapshot"]?.stringValue)

        let restore = try E2E.accountctl(["restore", "alice", chosen], socket: daemon.socket)
        #expect(restore.status == 0, "restore \(chosen) with keep \(keep): \(restore.stderr)")
        let path = daemon.accountPath("alice")
        #expect(try E2E.userVersion(path) == version)
        #expect(try E2E.sql(path, "SELECT user_name FROM user_info;") == "Ann")
        #expect(try Self.journalMode(path) == "wal")
        let after = try Self.snapshots("alice", socket: daemon.socket).compactMap { $0["snapshot"]?.stringValue }
        #expect(after.contains(chosen), "the restored snapshot is gone: \(after)")
        #expect(FileManager.default.fileExists(atPath: daemon.dataRoot + "/snapshots/alice/\(chosen).sqlite"))
        // And it can be restored again.
        #expect(try daemon.client().callOne("restore alice \(chosen)").error == nil)
    }

    /// Names that read as numbers (`007`, `1e5`, `1.50`, 20 digits) are stored as numbers by
    /// `accountd_meta`'s numeric affinity; the file was then refused as another account's
    /// (`AccountCorrupt`) at its second switch.
    @Test func accountsNamedLikeNumbersCanBeSwitchedToAgain() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let client = try daemon.client()
        let names = ["007", "1234", "1e5", "1.50", "92233720368547758080"]
        for name in names {
            #expect(try client.callOne("switch \(name)").error == nil, "creating \(name)")
        }
        #expect(try client.callOne("switch alice").error == nil)
        for name in names {
            let again = try client.callOne("switch \(name)")
            #expect(again.error == nil, "switching back to \(name): \(again.encoded())")
            #expect(try client.callOne("status \(name)").parameters["state"] == "current", "\(name)")
        }
        // A file still refuses a name it was not created for.
        try FileManager.default.copyItem(atPath: daemon.accountPath("007"), toPath: daemon.accountPath("008"))
        #expect(try client.callOne("switch 008").error?.shortName == "AccountCorrupt")
    }

    /// A restored file is in WAL mode at once, like every account file.
    @Test func aRestoredFileIsInWALMode() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne("snapshot alice").error == nil)
        #expect(try client.callOne("switch bob").error == nil)
        #expect(try client.callOne("restore alice").error == nil)
        #expect(try Self.journalMode(daemon.accountPath("alice")) == "wal")
        // The active account, restored and reopened, too.
        #expect(try client.callOne("restore bob").error?.shortName == "SnapshotNotFound")
        #expect(try client.callOne("snapshot bob").error == nil)
        #expect(try client.callOne("restore bob").error == nil)
        #expect(try Self.journalMode(daemon.accountPath("bob")) == "wal")
    }

    @Test func snapshotOnDemandWithAndWithoutLabel() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let socket = daemon.socket
        #expect(try daemon.client().callOne("switch alice").error == nil)

        let plain = try E2E.accountctl(["snapshot", "alice"], socket: socket)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout.contains("-v3-manual"), "\(plain.stdout)")
        let labelled = try E2E.accountctl(["--json", "snapshot", "alice", "--label", "pre-upgrade_2.1"], socket: socket)
        #expect(labelled.status == 0, "\(labelled.stderr)")
        let reply = try #require(try E2E.jsonLines(labelled.stdout).first)
        let name = try #require(reply["snapshot"]?.stringValue)
        #expect(name.hasSuffix("-v3-pre-upgrade_2.1"))
        // One entry of Snapshots, key for key and value for value.
        let listed = try Self.snapshots("alice", socket: socket)
        #expect(listed.count == 2)
        #expect(listed.first == reply)
        #expect(plain.stdout.contains(try #require(listed.last?["snapshot"]?.stringValue)))

        // Labels: refused before sending by accountctl (usage, 2), and by the daemon.
        for bad in ["", "../x", "a b", "-x", ".x", String(repeating: "l", count: 49), "é"] {
            let result = try E2E.accountctl(["snapshot", "alice", "--label", bad], socket: socket)
            #expect(result.status == 2, "label \(bad): exit \(result.status) \(result.stderr)")
            let raw = try daemon.client().callOne(
                JSONValue.object([
                    ("method", "io.accountd.Snapshot"), ("parameters", .object([("account", "alice"), ("label", .string(bad))])),
                ]).serialized())
            #expect(raw.error == .invalidParameter, "label \(bad): \(raw)")
            #expect(raw.parameters["parameter"] == "label")
            #expect(raw.message?.contains("A-Z a-z 0-9 . _ -") == true || raw.message?.contains("label") == true)
        }
        #expect(try Self.snapshots("alice", socket: socket).count == 2)
        let missing = try E2E.accountctl(["snapshot", "ghost"], socket: socket)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("AccountNotFound"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: daemon.dataRoot + "/snapshots/ghost"))
    }

    /// `accounts.snapshotMaxAgeDays` (here from the environment): taking a snapshot removes
    /// those older than the age, by the timestamp in their names, and keeps the rest.
    @Test func snapshotsOlderThanTheAgeGo() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_ACCOUNTS_SNAPSHOT_MAX_AGE_DAYS": "7"])
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        let first = try #require(client.callOne("snapshot alice").parameters["snapshot"]?.stringValue)
        let folder = daemon.dataRoot + "/snapshots/alice"
        func plant(daysAgo days: Double) throws -> String {
            let stamp = Date().addingTimeInterval(-days * 86_400).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            let name = stamp.replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "") + "-v3-manual"
            try FileManager.default.copyItem(atPath: folder + "/\(first).sqlite", toPath: folder + "/\(name).sqlite")
            return name
        }
        let old = try plant(daysAgo: 8)
        let recent = try plant(daysAgo: 6)
        // Listed with createdAt from the name.
        #expect(try Self.snapshots("alice", socket: daemon.socket).contains { $0["snapshot"]?.stringValue == old })
        let taken = try E2E.accountctl(["snapshot", "alice"], socket: daemon.socket)
        #expect(taken.status == 0, "\(taken.stderr)")
        let names = try Self.snapshots("alice", socket: daemon.socket).compactMap { $0["snapshot"]?.stringValue }
        #expect(names.count == 3, "\(names)")
        #expect(!names.contains(old))
        #expect(names.contains(recent) && names.contains(first))
    }

    /// Remove without purge: the file goes, a final snapshot stays, and restore brings the
    /// account back as it was.
    @Test func removeKeepsAFinalSnapshotThatRestores() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let socket = daemon.socket
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        let path = daemon.accountPath("alice")
        try E2E.sql(path, "INSERT INTO user_info(user_id, user_name, age, sex) VALUES (7, 'Ann', 30, 'f');")
        #expect(try client.callOne(#"set user theme "dark""#).error == nil)
        let rows = try TableDump.dumpFile(path: path)
        #expect(try client.callOne("switch bob").error == nil)

        let removed = try E2E.accountctl(["remove", "alice"], socket: socket)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.stdout.contains("Removed alice"), "\(removed.stdout)")
        #expect(removed.stdout.contains("-v3-before-remove"), "\(removed.stdout)")
        for suffix in ["", "-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: path + suffix), "\(path + suffix) is still there") }
        let listed = try Self.snapshots("alice", socket: socket)
        #expect(listed.count == 1)
        #expect(listed.first?["snapshot"]?.stringValue?.hasSuffix("-v3-before-remove") == true)
        let status = try client.callOne(#"{"method":"io.accountd.Status","parameters":{"account":"alice"}}"#)
        #expect(status.parameters["exists"] == false)
        #expect(try client.callOne("list").parameters["count"] == 1)

        // Removing it again: nothing to remove, and the message says what is left.
        let again = try E2E.accountctl(["remove", "alice"], socket: socket)
        #expect(again.status == 1)
        #expect(again.stderr.contains("AccountNotFound") && again.stderr.contains("--purge"), "\(again.stderr)")

        // Restore brings it back, rows, preferences and WAL mode included.
        let restore = try E2E.accountctl(["restore", "alice"], socket: socket)
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(!restore.stdout.contains("replaced"), "nothing was replaced: \(restore.stdout)")
        #expect(try TableDump.dumpFile(path: path) == rows)
        #expect(try Self.journalMode(path) == "wal")
        #expect(Files.mode(path) == 0o600)
        #expect(try client.callOne("switch alice").parameters["action"] == "opened")
        #expect(try client.callOne("get user theme").parameters["value"] == "dark")

        // The JSON reply.
        #expect(try client.callOne("switch bob").error == nil)
        let json = try E2E.accountctl(["--json", "remove", "alice"], socket: socket)
        let reply = try #require(try E2E.jsonLines(json.stdout).first)
        #expect(reply["account"] == "alice")
        #expect(reply["purged"] == false)
        #expect(reply["snapshot"]?["version"] == 3)
        #expect(reply["snapshot"]?["snapshot"]?.stringValue?.hasSuffix("-before-remove") == true)
    }

    /// Remove with purge: nothing of the account is left anywhere under the data root, not a
    /// file name and not a byte of its data; other accounts are untouched.
    @Test func purgeLeavesNothingOfTheAccount() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let socket = daemon.socket
        let client = try daemon.client()
        // Markers of each account's data; neither is a part of the other.
        let run = UUID().uuidString
        let marker = ["alice": "\(run)-alice-row", "alice-b": "\(run)-alice-b-row"]
        let preference = ["alice": "\(run)-alice-pref", "alice-b": "\(run)-alice-b-pref"]
        for account in ["alice", "alice-b"] {
            #expect(try client.callOne("switch \(account)").error == nil)
            try E2E.sql(daemon.accountPath(account), "INSERT INTO user_info(user_id, user_name) VALUES (1, '\(marker[account]!)');")
            #expect(try client.callOne(#"set user note "\#(preference[account]!)""#).error == nil)
            #expect(try client.callOne("snapshot \(account)").error == nil)
            #expect(try client.callOne("snapshot \(account) second").error == nil)
        }
        #expect(try client.callOne("switch bob").error == nil)
        // Leftovers a crash could leave: a staged export copy and a half-done restore.
        let tmp = daemon.dataRoot + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        for account in ["alice", "alice-b"] {
            try FileManager.default.copyItem(atPath: daemon.accountPath(account), toPath: tmp + "/export-\(account)-\(UUID().uuidString).sqlite")
        }
        try FileManager.default.copyItem(atPath: daemon.accountPath("alice"), toPath: daemon.dataRoot + "/accounts/.alice.sqlite.restoring")
        let otherBefore = try TableDump.dumpFile(path: daemon.accountPath("alice-b"))
        // What the walk below looks for is there to be found.
        #expect(Self.holders(of: marker["alice"]!, under: daemon.dataRoot).count >= 4)
        #expect(!Self.holders(of: preference["alice"]!, under: daemon.dataRoot).isEmpty)

        let purge = try E2E.accountctl(["remove", "alice", "--purge"], socket: socket)
        #expect(purge.status == 0, "\(purge.stderr)")
        #expect(purge.stdout.contains("Purged alice"), "\(purge.stdout)")

        // Walk the whole tree: no name of alice's, and no byte of her data.
        for relative in Self.tree(daemon.dataRoot) where relative.contains("alice") {
            #expect(relative.contains("alice-b"), "\(relative) is left of alice")
        }
        #expect(Self.holders(of: marker["alice"]!, under: daemon.dataRoot) == [], "alice's rows are left")
        #expect(Self.holders(of: preference["alice"]!, under: daemon.dataRoot) == [], "alice's preference is left")
        #expect(!Self.holders(of: marker["alice-b"]!, under: daemon.dataRoot).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: daemon.dataRoot + "/snapshots/alice"))
        #expect(try TableDump.dumpFile(path: daemon.accountPath("alice-b")) == otherBefore)
        #expect(try Self.snapshots("alice-b", socket: socket).count == 2)
        #expect(FileManager.default.fileExists(atPath: daemon.accountPath("alice-b")))
        #expect(try client.callOne("snapshots alice").error?.shortName == "AccountNotFound")
        #expect(try client.callOne("restore alice").error?.shortName == "SnapshotNotFound")

        // A purge erases what a plain removal left; then there is nothing to remove.
        #expect(try client.callOne("remove alice-b").error == nil)
        #expect(try Self.snapshots("alice-b", socket: socket).count == 3)
        let json = try E2E.accountctl(["--json", "remove", "alice-b", "--purge"], socket: socket)
        #expect(json.status == 0, "\(json.stderr)")
        let reply = try #require(try E2E.jsonLines(json.stdout).first)
        #expect(reply == .object([("account", "alice-b"), ("purged", true)]))
        #expect(Self.tree(daemon.dataRoot).allSatisfy { !$0.contains("alice") }, "\(Self.tree(daemon.dataRoot))")
        let nothing = try E2E.accountctl(["remove", "alice-b", "--purge"], socket: socket)
        #expect(nothing.status == 1)
        #expect(nothing.stderr.contains("AccountNotFound"), "\(nothing.stderr)")
    }

    /// The active account is refused, with or without purge, and nothing changes.
    @Test func theActiveAccountIsNotRemoved() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let socket = daemon.socket
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne(#"set user theme "dark""#).error == nil)
        let path = daemon.accountPath("alice")
        let before = try TableDump.dumpFile(path: path)
        for arguments in [["remove", "alice"], ["remove", "alice", "--purge"]] {
            let result = try E2E.accountctl(arguments, socket: socket)
            #expect(result.status == 1, "\(arguments): \(result.stdout)")
            #expect(result.stderr.contains("AccountActive"), "\(result.stderr)")
            #expect(result.stderr.contains("switch"), "the message says what to do: \(result.stderr)")
        }
        let raw = try client.callOne(#"{"method":"io.accountd.Remove","parameters":{"account":"alice","purge":true}}"#)
        #expect(raw.error?.rawValue == "io.accountd.AccountActive")
        #expect(raw.parameters["account"] == "alice")
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(try TableDump.dumpFile(path: path) == before)
        #expect(try Self.snapshots("alice", socket: socket).isEmpty)
        #expect(try client.callOne("get user theme").parameters["value"] == "dark")
        #expect(try client.callOne("status").parameters["active"] == "alice")

        // Bad requests.
        #expect(try client.callOne("remove ghost").error?.shortName == "AccountNotFound")
        #expect(try client.callOne("remove alice now").error == .invalidParameter)
        #expect(try client.callOne(#"{"method":"io.accountd.Remove","parameters":{"account":"alice","purge":"yes"}}"#).error == .invalidParameter)
        #expect(try E2E.accountctl(["remove"], socket: socket).status == 2)
        #expect(try E2E.accountctl(["remove", "../x"], socket: socket).status == 2)
    }

    /// A negative age is refused at start, naming the setting.
    @Test func aNegativeMaximumAgeStopsTheDaemonAtStart() throws {
        let dir = TestDirectory()
        try Files.write("{}\n", to: dir.sub("none.yaml"))
        let result = try E2E.run(
            Binaries.accountd,
            ["--data-root", dir.sub("data"), "--socket", dir.sub("s.sock"), "--schema", Repository.sampleBundle, "--config", dir.sub("none.yaml")],
            environment: ["ACCOUNTD_ACCOUNTS_SNAPSHOT_MAX_AGE_DAYS": "-1"])
        #expect(result.status == 78, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("accounts.snapshotMaxAgeDays"), "\(result.stderr)")
    }

    /// A file that SQLite cannot read is removed too, and its final snapshot keeps its bytes.
    @Test func aCorruptAccountIsRemovedWithItsBytesKept() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try garbage.write(to: URL(fileURLWithPath: daemon.accountPath("junk")))
        let client = try daemon.client()
        #expect(try client.callOne("switch junk").error?.shortName == "AccountCorrupt")
        let reply = try client.callOne("remove junk")
        #expect(reply.error == nil, "\(reply)")
        let name = try #require(reply.parameters["snapshot"]?["snapshot"]?.stringValue)
        #expect(name.hasSuffix("-v0-before-remove-unreadable"))
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("junk")))
        #expect(Files.bytes(daemon.dataRoot + "/snapshots/junk/\(name).sqlite") == garbage)
    }

    /// A Switch and a Remove of the same account sent at once: whichever wins, the active
    /// account always has its file, and each reply is success, `AccountActive` or
    /// `AccountNotFound`.
    @Test func aSwitchRacingARemovalNeverLeavesAnActiveAccountWithoutAFile() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let switcher = try daemon.client()
        let remover = try daemon.client()
        #expect(try switcher.callOne("switch bob").error == nil)
        var outcomes: [String: Int] = [:]
        for round in 0..<30 {
            #expect(try switcher.callOne("switch bob").error == nil)
            #expect(try switcher.callOne("switch carol").error == nil)
            #expect(try switcher.callOne("switch bob").error == nil)
            let removal = round % 2 == 0 ? "remove carol\n" : "remove carol purge\n"
            try remover.send(removal)
            try switcher.send("switch carol\n")
            let switched = try switcher.readReply()
            let removed = try remover.readReply()
            outcomes["switch \(switched.error?.shortName ?? "ok"), remove \(removed.error?.shortName ?? "ok")", default: 0] += 1
            #expect([nil, "AccountNotFound"].contains(switched.error?.shortName), "\(switched)")
            #expect([nil, "AccountActive"].contains(removed.error?.shortName), "\(removed)")
            let active = try #require(switcher.callOne("status").parameters["active"]?.stringValue)
            #expect(FileManager.default.fileExists(atPath: daemon.accountPath(active)), "round \(round): \(active) is active without a file")
            if switched.error != nil { #expect(active == "bob") }
        }
        print("switch/remove race outcomes: \(outcomes)")
    }
}
