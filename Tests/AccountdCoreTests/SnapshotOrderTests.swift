import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

@testable import AccountdCore

/// A snapshot dated in the future (taken while the clock was set ahead) is not "newest" for
/// good: it is listed last, a plain restore does not pick it while others exist, and the
/// count removes it first.
@Suite struct SnapshotOrderTests {
    @Test func aFutureDatedNameComesLast() {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let stamp = { (offset: TimeInterval) in Timestamp.compact(now.addingTimeInterval(offset)) }
        let future = "\(stamp(400 * 86_400))-v1-manual"
        let soon = "\(stamp(60))-v1-manual"  // within the slack: believed
        let recent = "\(stamp(-60))-v1-manual"
        let old = "\(stamp(-86_400))-v1-manual"
        #expect(SnapshotOrder.isFutureDated(future, now: now))
        #expect(!SnapshotOrder.isFutureDated(soon, now: now))
        #expect(!SnapshotOrder.isFutureDated("hand-made", now: now))
        #expect(SnapshotOrder.newestFirst([old, future, recent, soon], now: now) == [soon, recent, old, future])
    }

    /// Through the store, with real files: plain restore used to pick the future-dated copy,
    /// and retention removed every real snapshot beside it.
    @Test func restoreAndRetentionDoNotTrustAFutureDate() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let bundle = try BundleFixture.write(at: dir.sub("b"), steps: ["CREATE TABLE t (a);"])
        var options = AccountStore.Options()
        options.snapshotsToKeep = 3
        let store = AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle), options: options)
        _ = try store.open(alice)
        let path = store.root.accountPath(alice)
        let first = try store.takeSnapshot(alice)
        // A copy taken while the clock said 2099.
        let future = "20990101T000000.000Z-v1-manual"
        try FileManager.default.copyItem(atPath: first.path, toPath: store.root.snapshotDirectory(alice) + "/" + future + ".sqlite")
        _ = try Files.sqlite3(path, "INSERT INTO t VALUES ('latest');")
        let second = try store.takeSnapshot(alice)
        #expect(store.listSnapshots(alice).map(\.name) == [second.name, first.name, future])

        // A plain restore brings back the newest real snapshot, with the row.
        _ = try Files.sqlite3(path, "DELETE FROM t;")
        let (restored, saved) = try store.restore(alice, snapshot: nil)
        #expect(restored.name == second.name)
        #expect(try Files.sqlite3(path, "SELECT a FROM t;").trimmingCharacters(in: .whitespacesAndNewlines) == "latest")

        // Keep 3: the next snapshot pushes the future-dated one out first, not a real one.
        let third = try store.takeSnapshot(alice)
        let names = store.listSnapshots(alice).map(\.name)
        #expect(!names.contains(future), "\(names)")
        #expect(names == [third.name, try #require(saved?.name), second.name], "\(names)")
    }
}
