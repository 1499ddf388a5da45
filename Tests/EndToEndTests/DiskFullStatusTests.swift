import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A full disk is the disk's fault, never the file's: a sound account that cannot be opened
/// for want of space is not called corrupt, and no reply advises restoring or moving it.
@Suite struct DiskFullStatusTests {
    /// On a filled 2 MiB tmpfs, a healthy account without `-wal`/`-shm` (SQLite must create
    /// its WAL index to read it): `Status` says `unavailable` with the disk full as the problem,
    /// and Get, Set and Switch say the disk is full, with no `AccountCorrupt` and no advice to
    /// restore or move the file. Nothing changes in the file; once space returns, the same
    /// account switches (it says `unavailable` until it does) and verifies healthy.
    @Test func aFullDiskIsNotReportedAsCorruption() throws {
        let dir = TestDirectory()
        let dataRoot = dir.sub("data")
        let tmpfs = try Hostile.Tmpfs.mounted(at: dataRoot, kibibytes: 2 * 1024)
        defer { tmpfs.unmount() }
        try E2E.createOffline("alice", dataRoot: dataRoot, bundle: Repository.sampleBundle)
        let path = dataRoot + "/accounts/alice.sqlite"
        try #require(!FileManager.default.fileExists(atPath: path + "-wal") && !FileManager.default.fileExists(atPath: path + "-shm"))
        let bytes = try #require(Files.bytes(path))

        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch bob").error == nil)
        // alice is not looked at before the disk is full: what the daemon remembers of a file
        // it has read would answer without opening it.
        let filler = dataRoot + "/filler"
        Hostile.fillLeaving(0, folder: dataRoot, path: filler)

        let status = try client.callOne("status alice")
        #expect(status.error == nil)
        #expect(status.parameters["state"] == "unavailable", "\(status.parameters)")
        #expect(status.parameters["problem"]?.stringValue?.contains("disk is full") == true, "\(status.parameters)")
        for request in ["get user theme alice", #"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"k","value":1,"account":"alice"}}"#, "switch alice"] {
            let reply = try client.callOne(request)
            let message = reply.message ?? ""
            #expect(reply.error != nil && reply.error != .accountCorrupt, "\(request): \(reply.error?.rawValue ?? "success") \(message)")
            #expect(message.contains("disk is full"), "\(request): \(message)")
            #expect(!message.contains("Restore a snapshot") && !message.contains("move the file aside"), "\(request): \(message)")
            print("DiskFullStatusTests \(request.prefix(12)): \(reply.error?.rawValue ?? "success"): \(message.replacingOccurrences(of: dir.path, with: "…"))")
        }
        #expect(Files.bytes(path) == bytes, "alice.sqlite changed")
        #expect(try client.callOne("status").parameters["active"] == "bob")

        // Space returns: the failed switch still says `unavailable`, in Status as in the metrics,
        // until an open succeeds (hostile34c H2); the same account switches and is healthy.
        try FileManager.default.removeItem(atPath: filler)
        #expect(try client.callOne("status alice").parameters["state"] == "unavailable")
        let switched = try client.callOne("switch alice")
        #expect(switched.error == nil, "\(switched.parameters)")
        #expect(try client.callOne("status alice").parameters["state"] == "current")
        let verify = try client.callOne("verify alice")
        #expect(verify.parameters["healthy"] == true, "\(verify.parameters)")
    }
}
