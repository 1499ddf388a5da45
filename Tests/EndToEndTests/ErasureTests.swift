import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Erasure is complete, and the record of the active account survives being replaced
/// (issue 29, findings 8 and 9).
@Suite struct ErasureTests {
    /// Every regular file under `folder` whose raw bytes contain `needle`, by relative path.
    static func filesContaining(_ needle: String, under folder: String) throws -> [String] {
        let bytes = Data(needle.utf8)
        return try FileManager.default.subpathsOfDirectory(atPath: folder).filter { path in
            var info = stat()
            guard lstat(folder + "/" + path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
            return Files.bytes(folder + "/" + path)?.range(of: bytes) != nil
        }.sorted()
    }

    /// Finding 8: after `switch mallory...`, `switch alice` and a purge of mallory, the
    /// older slot of `state.json` still named mallory. No byte of the name or of the
    /// account's rows may stay anywhere under the data root.
    @Test func afterAPurgeNoByteOfTheNameOrTheDataRemainsUnderTheDataRoot() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try Hostile.client(daemon.socket)
        let name = "mallory.secret@example.com"
        let row = "ROW-BYTES-7f3a9c-only-in-mallory"
        #expect(try client.callOne("switch \(name)").error == nil)
        #expect(try client.callOne(#"set user note "\#(row)""#).error == nil)
        #expect(try client.callOne("snapshot \(name)").error == nil)
        #expect(try client.call(#"{"method":"io.accountd.Export","parameters":{"account":"\#(name)","format":"sqlite"},"more":true}"#).last?.error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne(#"set user theme "dark""#).error == nil)
        #expect(try Self.filesContaining(name, under: daemon.dataRoot).contains("state.json"), "the older slot names mallory before the purge")

        let purged = try client.callOne("remove \(name) purge")
        #expect(purged.error == nil, "\(purged.encoded())")
        #expect(try Self.filesContaining(name, under: daemon.dataRoot) == [])
        #expect(try Self.filesContaining(row, under: daemon.dataRoot) == [])
        let names = try FileManager.default.subpathsOfDirectory(atPath: daemon.dataRoot).filter { $0.contains("mallory") }
        #expect(names == [], "\(names)")
        // The record still names alice, now and after a restart.
        #expect(try Files.savedActiveAccount(daemon.dataRoot) == "alice")
        try daemon.restart()
        #expect(try daemon.client().callOne("status").parameters["active"] == "alice")
        #expect(try Self.filesContaining(name, under: daemon.dataRoot) == [])
        #expect(try daemon.client().callOne("get user theme").parameters["value"] == "dark")
    }

    /// A purge that a crash (kill -9) or a failed deletion interrupts leaves part of the
    /// account moved aside under `.<account>.purging` and part in place (here: its file
    /// moved, its snapshots not yet). The next start of the daemon finishes the purge: no
    /// byte of the account, moved aside or not, outlives the restart.
    @Test func aPurgeInterruptedHalfWayIsFinishedAtTheNextStart() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try Hostile.client(daemon.socket)
        let name = "erin.secret@example.com"
        let row = "ROW-BYTES-erin-4471"
        #expect(try client.callOne("switch \(name)").error == nil)
        #expect(try client.callOne(#"set user note "\#(row)""#).error == nil)
        #expect(try client.callOne("snapshot \(name)").error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        #expect(daemon.stop(signal: SIGKILL) != 0)
        // The state a purge killed after its first renames leaves.
        let accounts = daemon.dataRoot + "/accounts"
        let aside = accounts + "/.\(name).purging"
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: true)
        for file in try FileManager.default.contentsOfDirectory(atPath: accounts) where file.hasPrefix(name + ".sqlite") {
            try FileManager.default.moveItem(atPath: accounts + "/" + file, toPath: aside + "/" + file)
        }
        #expect(try Self.filesContaining(row, under: daemon.dataRoot).count >= 2, "the moved file and the snapshot hold the row")
        try daemon.restart()
        #expect(try Self.filesContaining(name, under: daemon.dataRoot) == [], "\(daemon.log.suffix(1500))")
        #expect(try Self.filesContaining(row, under: daemon.dataRoot) == [])
        let names = try FileManager.default.subpathsOfDirectory(atPath: daemon.dataRoot).filter { $0.contains("erin") }
        #expect(names == [], "\(names)")
        #expect(try daemon.client().callOne("get user note --account alice").error != .internalError)
        #expect(try daemon.client().callOne("status").parameters["active"] == "alice")
    }

    /// A purge is all or nothing: when something of the account cannot be moved aside (here
    /// its snapshot folder is a mount point, which `rename` refuses with EBUSY), what was
    /// moved is put back and the account is as it was, file, rows and snapshots.
    @Test(.enabled(if: getuid() == 0, "needs root to mount a tmpfs"))
    func aPurgeThatCannotMoveEverythingAsideChangesNothing() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try Hostile.client(daemon.socket)
        #expect(try client.callOne("switch dave").error == nil)
        #expect(try client.callOne(#"set user theme "dave's""#).error == nil)
        #expect(try client.callOne("snapshot dave").error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        guard let mount = Hostile.Tmpfs(at: daemon.dataRoot + "/snapshots/dave", kibibytes: 1024) else {
            print("aPurgeThatCannotMoveEverythingAsideChangesNothing: skipped, mounting a tmpfs is not possible here")
            return
        }
        defer { mount.unmount() }
        try Files.write("a snapshot on another disk\n", to: mount.path + "/20261126T000000.000Z-v3-manual.sqlite")
        let before = Hostile.listing(daemon.dataRoot + "/accounts").filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }

        let purge = try client.callOne("remove dave purge")
        #expect(purge.error == .internalError, "\(purge.encoded())")
        #expect(purge.message?.contains("the account is as it was") == true, "\(purge.message ?? "")")
        #expect(Hostile.listing(daemon.dataRoot + "/accounts").filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") } == before)
        #expect(Hostile.listing(mount.path) == ["20261126T000000.000Z-v3-manual.sqlite"])
        #expect(try client.callOne("get user theme dave").parameters["value"] == "dave's")
        mount.unmount()
        #expect(try client.callOne("remove dave purge").error == nil)
        #expect(try Self.filesContaining("dave's", under: daemon.dataRoot) == [])
    }

    /// Finding 9: with `state.json` removed, or replaced by an editor's save-by-rename,
    /// while the daemon ran, an acknowledged Switch was written into the old file and lost
    /// at the next start.
    @Test(arguments: ["removed", "replaced", "linked"])
    func anAcknowledgedSwitchSurvivesStateJsonBeingReplaced(_ how: String) throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try Hostile.client(daemon.socket)
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne("switch bob").error == nil)
        let state = daemon.dataRoot + "/state.json"
        let decoy = dir.sub("decoy.json")
        switch how {
        case "removed":
            try FileManager.default.removeItem(atPath: state)
        case "replaced":
            try Files.write(#"{"active":"alice"}"# + "\n", to: state + ".edit")
            #expect(rename(state + ".edit", state) == 0)
        default:
            try Files.write("not accountd's\n", to: decoy)
            try FileManager.default.removeItem(atPath: state)
            try FileManager.default.createSymbolicLink(atPath: state, withDestinationPath: decoy)
        }
        #expect(try client.callOne("switch carol").error == nil)
        // A crash right after the reply: only what is on disk counts.
        daemon.stop(signal: SIGKILL)
        #expect(try Files.savedActiveAccount(daemon.dataRoot) == "carol")
        try daemon.restart()
        #expect(try daemon.client().callOne("status").parameters["active"] == "carol", "\(daemon.log.suffix(1500))")
        if how == "linked" {
            #expect(Files.bytes(decoy) == Data("not accountd's\n".utf8))
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: state)) == nil, "state.json is a file again")
        }
    }
}
