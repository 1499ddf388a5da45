import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Links under the data root are never followed (issue 29, findings 4 to 6): a remove or
/// purge through a linked folder or file is refused with `AccountCorrupt` and changes
/// nothing; a pull never changes what a planted link points to; leftovers of a failed pull
/// or purge never break the next one.
@Suite struct DataRootLinkTests {
    /// Finding 4: with `snapshots/dave` a link to a folder elsewhere (as an operator moving
    /// snapshots to another disk might make), a purge erased that folder's files, then failed
    /// after the account file was gone. Now: refused, nothing changed, here or there.
    @Test func aPurgeThroughALinkedSnapshotFolderIsRefusedAndChangesNothing() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try Hostile.client(daemon.socket)
        #expect(try client.callOne("switch dave").error == nil)
        #expect(try client.callOne(#"set user theme "dave's""#).error == nil)
        #expect(try client.callOne("snapshot dave").error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        let snapshots = daemon.dataRoot + "/snapshots/dave"
        let elsewhere = dir.sub("elsewhere")
        try FileManager.default.moveItem(atPath: snapshots, toPath: elsewhere)
        try Files.write("nothing to do with accountd\n", to: elsewhere + "/unrelated.txt")
        try FileManager.default.createSymbolicLink(atPath: snapshots, withDestinationPath: elsewhere)
        let elsewhereBefore = Hostile.listing(elsewhere)
        // The daemon may close dave's preference table (a checkpoint): compare rows and names, not bytes.
        let daveBefore = try TableDump.dumpFile(path: daemon.accountPath("dave"))
        func accounts() -> [String] { Hostile.listing(daemon.dataRoot + "/accounts").filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") } }
        let accountsBefore = accounts()

        for request in ["remove dave purge", "remove dave", "snapshot dave", "restore dave", "switch dave"] {
            let reply = try client.callOne(request)
            #expect(reply.error == .accountCorrupt, "\(request) -> \(reply.encoded())")
            #expect(reply.message?.contains("symbolic link") == true, "\(request) -> \(reply.message ?? "")")
        }
        let status = try client.callOne("status dave")
        #expect(status.parameters["state"] == "corrupt" && status.parameters["problem"]?.stringValue?.contains("symbolic link") == true, "\(status.encoded())")
        #expect(Hostile.listing(elsewhere) == elsewhereBefore)
        #expect(Files.bytes(elsewhere + "/unrelated.txt") == Data("nothing to do with accountd\n".utf8))
        #expect(try TableDump.dumpFile(path: daemon.accountPath("dave")) == daveBefore)
        #expect(accounts() == accountsBefore)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: snapshots)) == elsewhere)

        // With the folder put back, the purge erases everything of dave, and only that.
        try FileManager.default.removeItem(atPath: snapshots)
        try FileManager.default.removeItem(atPath: elsewhere + "/unrelated.txt")
        try FileManager.default.moveItem(atPath: elsewhere, toPath: snapshots)
        #expect(try client.callOne("get user theme dave").parameters["value"] == "dave's")
        let purged = try client.callOne("remove dave purge")
        #expect(purged.error == nil, "\(purged.encoded())")
        #expect(purged.parameters["purged"] == true, "\(purged.encoded())")
        #expect(Hostile.listing(daemon.dataRoot + "/accounts").filter { $0.contains("dave") } == [])
        #expect(Hostile.listing(daemon.dataRoot + "/snapshots").filter { $0.contains("dave") } == [])
        #expect(try client.callOne("status dave").parameters["state"] == "missing")
        #expect(daemon.log.contains("account dave purged: its file and 1 snapshot(s) were erased"), "\(daemon.log.suffix(2000))")
    }

    /// Finding 6: `remove` of an account whose file is a link answered `InternalError`
    /// ("Too many levels of symbolic links") where every other method answers `AccountCorrupt`.
    @Test func removingALinkedAccountIsAccountCorruptAndTouchesNeitherLinkNorTarget() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try Hostile.client(daemon.socket)
        #expect(try client.callOne("switch bob").error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        let accounts = daemon.dataRoot + "/accounts/"
        try FileManager.default.createSymbolicLink(atPath: accounts + "carol.sqlite", withDestinationPath: accounts + "bob.sqlite")
        let bob = try #require(Files.bytes(accounts + "bob.sqlite"))
        for request in ["remove carol", "remove carol purge"] {
            let reply = try client.callOne(request)
            #expect(reply.error == .accountCorrupt, "\(request) -> \(reply.encoded())")
            #expect(reply.message?.contains("symbolic link") == true, "\(reply.message ?? "")")
        }
        #expect(Files.bytes(accounts + "bob.sqlite") == bob)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: accounts + "carol.sqlite")) == accounts + "bob.sqlite")
        #expect(Hostile.listing(daemon.dataRoot + "/snapshots").contains("carol") == false)
    }

    /// Where a link to elsewhere is planted in place of the device file (issue 29, finding 1).
    enum DeviceLink: String, CaseIterable, Sendable {
        /// `device.sqlite` a link to an empty file elsewhere.
        case toAFile
        /// `device.sqlite` a link to nothing: the daemon created the target.
        case dangling
        /// `device.sqlite-wal` a link, `device.sqlite` itself missing.
        case wal
    }

    /// Issue 29, finding 1: with `device.sqlite` (or its `-wal`) a link, the daemon wrote its
    /// device-wide preferences at the link's target, creating it (and `-wal`, `-shm` beside
    /// it) when missing. Now the start is refused, naming the file, and nothing is written
    /// through the link.
    @Test(arguments: DeviceLink.allCases)
    func aLinkedDeviceFileStopsTheStartAndNothingIsWrittenThroughIt(link: DeviceLink) throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        let elsewhere = dir.sub("elsewhere")
        try FileManager.default.createDirectory(atPath: dataRoot, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        let target = elsewhere + "/empty"
        if link != .dangling { try Files.write("", to: target) }
        let name = link == .wal ? "device.sqlite-wal" : "device.sqlite"
        try FileManager.default.createSymbolicLink(atPath: dataRoot + "/" + name, withDestinationPath: target)

        var started: DaemonProcess?
        do { started = try E2E.daemon(directory: dir.path) } catch {}
        if let daemon = started {
            // What the hostile tester did: one device-wide Set.
            _ = try? daemon.client().callOne(#"set switch flag "X""#)
            daemon.stop()
        }
        #expect(started == nil, "accountd started with \(name) a link")
        let log = (try? String(contentsOfFile: dir.sub("accountd.log"), encoding: .utf8)) ?? ""
        #expect(log.contains("\(dataRoot)/\(name) is a symbolic link"), "\(log.suffix(2000))")
        #expect(log.contains("Move it aside"), "\(log.suffix(2000))")
        #expect(Hostile.listing(elsewhere) == (link == .dangling ? [] : ["empty"]))
        #expect(Files.bytes(target) == (link == .dangling ? nil : Data()))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: dataRoot + "/" + name)) == target)
    }

    /// A stand-in for `litestream restore -json -o OUTPUT SOURCE` that runs `action` with
    /// `$out` set to OUTPUT, then prints a txid.
    static func fakeLitestream(at path: String, _ action: String) throws {
        try Files.write(
            """
            #!/bin/sh
            while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
            \(action)
            echo '{"txid":"0000000000000001"}'

            """, to: path)
        #expect(chmod(path, 0o755) == 0)
    }

    /// A stand-in Litestream whose restore copies carol, an account file made elsewhere
    /// (the replica's copy); its path.
    static func replicaOfCarol(_ dir: borrowing TestDirectory) throws -> String {
        try E2E.createOffline("carol", dataRoot: dir.sub("origin"), bundle: Repository.sampleBundle)
        let copy = dir.sub("origin/accounts/carol.sqlite")
        _ = try E2E.sql(copy, "PRAGMA wal_checkpoint(TRUNCATE);")
        let litestream = dir.sub("litestream")
        try fakeLitestream(at: litestream, "cp '\(copy)' \"$out\"")
        return litestream
    }

    /// hostile33f: a pull refused because `tmp/` is a link left its staging folder in `accounts/`.
    @Test(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
    func aPullRefusedForALinkedTmpLeavesNoStagingFolder() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let daemon = try E2E.replicatingDaemon(
            directory: dir.sub("host"), bundle: bundle, replica: "file://" + dir.sub("replica"), runDirectory: dir.sub("run"))
        try FileManager.default.createDirectory(atPath: dir.sub("elsewhere"), withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: daemon.dataRoot + "/tmp")
        try FileManager.default.createSymbolicLink(atPath: daemon.dataRoot + "/tmp", withDestinationPath: dir.sub("elsewhere"))
        let pull = try E2E.accountctl(["pull", "carol"], socket: daemon.socket)
        #expect(pull.status == 1 && pull.stderr.contains("tmp"), "\(pull.stdout) \(pull.stderr)")
        #expect(Hostile.listing(daemon.dataRoot + "/accounts").filter { $0.contains("carol") } == [], "left in accounts/")
        #expect(Hostile.listing(dir.sub("elsewhere")) == [], "written through the link")
    }

    /// Finding 5: the pull made the staging file 0600 with `chmod` before it checked for a
    /// link, so a link planted there changed the mode of the file it pointed to.
    @Test func aPullNeverChangesTheModeOfWhatALinkPointsTo() throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        let decoy = dir.sub("decoy.conf")
        try Files.write("someone else's file\n", to: decoy)
        #expect(chmod(decoy, 0o644) == 0)
        let litestream = dir.sub("litestream")
        try Self.fakeLitestream(at: litestream, "ln -s '\(decoy)' \"$out\"")

        let pull = try E2E.run(
            Binaries.accountd, ["pull", "--data-root", dataRoot, "--replica", "file:///nowhere", "--litestream", litestream, "carol"])
        #expect(pull.status == 1, "\(pull.stdout) \(pull.stderr)")
        #expect(pull.stderr.contains("symbolic link"), "\(pull.stderr)")
        #expect(Files.mode(decoy) == 0o644)
        #expect(Files.bytes(decoy) == Data("someone else's file\n".utf8))
        #expect(Hostile.listing(dataRoot + "/accounts") == [], "the planted link is removed, the file it points to kept")
    }

    /// Finding 6: a leftover `.carol.sqlite.pulling` folder made every later pull of carol
    /// fail with "Is a directory", and the failed pull left it behind. Leftovers of any kind
    /// at the staging name (a folder with files, a link) are cleared, unfollowed.
    @Test func leftoversAtThePullsStagingNameNeverBreakTheNextPull() throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        let litestream = try Self.replicaOfCarol(dir)
        let outside = dir.sub("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try Files.write("keep me\n", to: outside + "/keep.txt")

        let staging = dataRoot + "/accounts/.carol.sqlite.pulling"
        try FileManager.default.createDirectory(atPath: staging + "/inner", withIntermediateDirectories: true)
        try Files.write("left by a failed pull\n", to: staging + "/inner/part")
        try FileManager.default.createSymbolicLink(atPath: staging + "-wal", withDestinationPath: outside)
        let pull = try E2E.run(
            Binaries.accountd, ["pull", "--data-root", dataRoot, "--replica", "file:///nowhere", "--litestream", litestream, "carol"])
        #expect(pull.status == 0, "\(pull.stdout) \(pull.stderr)")
        #expect(try E2E.userVersion(dataRoot + "/accounts/carol.sqlite") == 3)
        #expect(Hostile.listing(dataRoot + "/accounts") == ["carol.sqlite"])
        #expect(Hostile.listing(outside) == ["keep.txt"])

        // The same leftovers do not stop a purge either, which erases them.
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try Hostile.client(daemon.socket)
        try FileManager.default.createDirectory(atPath: staging + "/inner", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: staging + "-shm", withDestinationPath: outside + "/keep.txt")
        let purged = try client.callOne("remove carol purge")
        #expect(purged.error == nil, "\(purged.encoded())")
        #expect(Hostile.listing(dataRoot + "/accounts").filter { $0.contains("carol") } == [])
        #expect(Hostile.listing(outside) == ["keep.txt"])
        // A leftover alone is purged too, rather than answered AccountNotFound.
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        #expect(try client.callOne("remove carol purge").error == nil)
        #expect(!FileManager.default.fileExists(atPath: staging))
        #expect(try client.callOne("remove carol purge").error == .accountNotFound)
    }

    /// hostile33e #6: with `moved/` planted as a link, a pull answered "nothing was changed"
    /// after it had linked the pulled file into place. It is refused before anything is.
    @Test func aPullWithMovedPlantedAsALinkLinksNothingIntoPlace() throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        let litestream = try Self.replicaOfCarol(dir)
        try FileManager.default.createDirectory(atPath: dataRoot + "/accounts", withIntermediateDirectories: true)
        let elsewhere = dir.sub("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dataRoot + "/moved", withDestinationPath: elsewhere)

        let pull = try E2E.run(
            Binaries.accountd, ["pull", "--data-root", dataRoot, "--replica", "file:///nowhere", "--litestream", litestream, "carol"])
        #expect(pull.status == 1, "\(pull.stdout) \(pull.stderr)")
        #expect(pull.stderr.contains("moved"), "\(pull.stderr)")
        #expect(Hostile.listing(dataRoot + "/accounts") == [], "the pulled file was linked into place")
        #expect(Hostile.listing(elsewhere) == [])
    }
}
