import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// hostile34e G1: each restore that failed (the account file immutable, a failing disk) kept
/// a fresh `before-restore` snapshot of the unchanged file and applied retention, so retrying
/// pushed out the `before-restore` snapshot that held the writes an earlier restore had set
/// aside. A failed restore now keeps no snapshot and prunes nothing.
@Suite(.enabled(if: getuid() == 0, "needs root for chattr +i"))
struct FailedRestoreSnapshotTests {
    @Test func retriedFailedRestoresKeepTheSetAsideWrites() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let socket = daemon.socket
        #expect(try E2E.accountctl(["switch", "alice"], socket: socket).status == 0)
        let taken = try E2E.accountctl(["snapshot", "alice"], socket: socket)
        #expect(taken.status == 0, "\(taken.stderr)")
        let base = try #require(AccountLifecycleTests.snapshots("alice", socket: socket).first?["snapshot"]?.stringValue)
        let set = try E2E.accountctl(["set", "user", "draft", "\"set aside\""], socket: socket)
        #expect(set.status == 0, "\(set.stderr)")
        // The restore sets the write aside in a before-restore snapshot.
        let restored = try E2E.accountctl(["restore", "alice", base], socket: socket)
        #expect(restored.status == 0, "\(restored.stderr)")
        let aside = try #require(
            AccountLifecycleTests.snapshots("alice", socket: socket).compactMap { $0["snapshot"]?.stringValue }.first { $0.hasSuffix("before-restore") })

        let path = daemon.accountPath("alice")
        guard (try? E2E.run("/usr/bin/chattr", ["+i", path]))?.status == 0 else { return }  // a file system without the flag
        defer { _ = try? E2E.run("/usr/bin/chattr", ["-i", path]) }
        for attempt in 0..<7 {
            let failed = try E2E.accountctl(["restore", "alice", base], socket: socket)
            #expect(failed.status != 0, "attempt \(attempt) restored an immutable file")
            // What is in the way, not another handle's words (hostile34e G3).
            #expect(failed.stderr.contains("Operation not permitted") && !failed.stderr.contains("no more rows"), "\(failed.stderr)")
        }
        _ = try E2E.run("/usr/bin/chattr", ["-i", path])
        let names = try AccountLifecycleTests.snapshots("alice", socket: socket).compactMap { $0["snapshot"]?.stringValue }
        #expect(names.contains(aside), "the snapshot holding the set-aside write was pruned: \(names)")
        #expect(names.filter { $0.hasSuffix("before-restore") } == [aside], "\(names)")
        #expect(AccountLifecycleTests.holders(of: "set aside", under: daemon.dataRoot + "/snapshots").count == 1)
    }
}
