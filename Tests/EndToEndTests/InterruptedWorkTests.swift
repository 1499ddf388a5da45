import AccountdTestSupport
import Foundation
import Testing

/// hostile34e G4: kill -9 during a rollback left each account's full staged copy
/// (`accounts/.<account>.sqlite.restoring`) and half-written snapshots (`.…tmp`); a restart
/// kept them, unseen by the disk metrics. The daemon removes them when it starts; nothing
/// else of the data root is touched (Litestream's state, unknown names, what a link points to).
@Suite struct InterruptedWorkTests {
    @Test func theNextStartRemovesWhatInterruptedRestoresAndSnapshotsLeft() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        #expect(try daemon.client().callOne("switch alice").error == nil)
        _ = E2E.stop(daemon)

        let accounts = daemon.dataRoot + "/accounts"
        let snapshots = daemon.dataRoot + "/snapshots/alice"
        try FileManager.default.createDirectory(atPath: snapshots, withIntermediateDirectories: true)
        let outside = dir.sub("outside.sqlite")
        try Files.write("not to be touched", to: outside)
        let left = [
            accounts + "/.alice.sqlite.restoring", accounts + "/.alice.sqlite.restoring-wal", accounts + "/.bob.sqlite.creating",
            snapshots + "/.20261127T000000.000Z-v3-before-restore.tmp",
        ]
        for path in left { try FileManager.default.copyItem(atPath: daemon.accountPath("alice"), toPath: path) }
        try FileManager.default.createSymbolicLink(atPath: accounts + "/.carol.sqlite.pulling", withDestinationPath: outside)
        let kept = [accounts + "/.alice.sqlite-litestream", accounts + "/.notes"]
        try FileManager.default.createDirectory(atPath: kept[0], withIntermediateDirectories: true)
        try Files.write("an operator's file", to: kept[1])

        try E2E.spawning { try daemon.restart() }
        defer { _ = E2E.stop(daemon) }
        for path in left + [accounts + "/.carol.sqlite.pulling"] {
            #expect(!FileManager.default.fileExists(atPath: path) && (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == nil, "\(path) is still there")
        }
        for path in kept { #expect(FileManager.default.fileExists(atPath: path), "\(path) was removed") }
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "not to be touched")
        #expect(daemon.log.contains("removed 4 file(s) that operations interrupted"), "\(daemon.log.suffix(1500))")
        #expect(try daemon.client().callOne("switch alice").error == nil)
    }
}
