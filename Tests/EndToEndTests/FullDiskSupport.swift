import AccountdTestSupport
import Foundation
import Testing

/// How the tests of a Migrate that fails for want of space begin: an outdated account `g1`
/// (version 2 of the sample bundle, two rows) on a data root on a 2 MiB tmpfs of its own, its
/// daemon running, g1 read once (so its `-shm` exists and the snapshot is what runs out of
/// space), then the disk filled and `accountctl migrate g1` run. The test is cancelled, saying
/// why, where no tmpfs can be mounted; it calls ``end()`` when done (`defer`).
final class FullDiskMigrate {
    let dataRoot: String
    let daemon: DaemonProcess
    /// What `accountctl migrate g1` answered on the full disk.
    let failed: (status: Int32, stdout: String, stderr: String)
    private let tmpfs: Hostile.Tmpfs
    private let filler: String

    init(_ dir: borrowing TestDirectory) throws {
        dataRoot = dir.sub("data")
        let tmpfs = try Hostile.Tmpfs.mounted(at: dataRoot, kibibytes: 2 * 1024)
        self.tmpfs = tmpfs
        let old = try BundleFixture.truncate(Repository.sampleBundle, at: 2, into: dir.sub("old"))
        try E2E.createOffline("g1", dataRoot: dataRoot, bundle: old)
        try E2E.sqlite3(dataRoot + "/accounts/g1.sqlite", "INSERT INTO user_info (user_name) VALUES ('a'), ('b');")
        daemon = try E2E.daemon(directory: dir.path)
        filler = dataRoot + "/filler"
        try #require(try daemon.client().callOne("status g1").parameters["state"] == "outdated")
        Hostile.fillLeaving(0, folder: dataRoot, path: filler)
        failed = try E2E.accountctl(["migrate", "g1"], socket: daemon.socket)
    }

    /// Gives the space back.
    func free() { try? FileManager.default.removeItem(atPath: filler) }

    /// Stops the daemon, then unmounts the data root.
    func end() {
        _ = E2E.stop(daemon)
        tmpfs.unmount()
    }
}
