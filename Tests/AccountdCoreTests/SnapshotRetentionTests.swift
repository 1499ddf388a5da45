import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

@testable import AccountdCore

/// Which snapshots retention keeps: by count, by age, and never the protected ones.
@Suite struct SnapshotRetentionTests {
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    /// A listed snapshot taken `days` before ``now``.
    static func snapshot(daysAgo days: Double, reason: String = "before-migrate") -> SnapshotInfo {
        let name = "\(Timestamp.compact(now.addingTimeInterval(-days * 86_400)))-v1-\(reason)"
        return SnapshotInfo(name: name, version: 1, createdAt: SnapshotStore.createdAt(fromName: name), sizeBytes: 1, path: "/x/" + name)
    }

    @Test func theAgeComesFromTheName() throws {
        let snapshot = Self.snapshot(daysAgo: 3)
        let taken = try #require(SnapshotStore.takenAt(fromName: snapshot.name))
        #expect(abs(taken.timeIntervalSince(Self.now) + 3 * 86_400) < 0.001)
        #expect(SnapshotStore.takenAt(fromName: "not-a-timestamp-v1-x") == nil)
    }

    @Test func aSnapshotGoesBeyondTheCountOrOlderThanTheAge() {
        // Newest first, as SnapshotStore.list gives them.
        let list = [0.0, 1, 2, 10, 40].map { Self.snapshot(daysAgo: $0) }
        let names = { (expired: [SnapshotInfo]) in expired.map(\.name) }
        // By count only.
        #expect(names(SnapshotRetention(keep: 3).expired(list, now: Self.now, protected: [])) == names(Array(list.suffix(2))))
        // By age as well: 10 and 40 days are older than 7, whatever the count allows.
        #expect(
            names(SnapshotRetention(keep: 100, maximumAgeDays: 7).expired(list, now: Self.now, protected: []))
                == names(Array(list.suffix(2))))
        // Either rule removes: the third is beyond keep 2, the fourth and fifth too old.
        #expect(
            names(SnapshotRetention(keep: 2, maximumAgeDays: 30).expired(list, now: Self.now, protected: []))
                == names(Array(list.suffix(3))))
        // Protected names stay whatever the rules say.
        #expect(
            names(SnapshotRetention(keep: 1, maximumAgeDays: 7).expired(list, now: Self.now, protected: [list[4].name, list[0].name]))
                == names([list[1], list[2], list[3]]))
        // A name without a timestamp is kept by age, removed only by count.
        let odd = SnapshotInfo(name: "hand-made", version: 1, createdAt: "", sizeBytes: 1, path: "/x/hand-made")
        #expect(SnapshotRetention(keep: 5, maximumAgeDays: 1).expired([odd], now: Self.now, protected: []).isEmpty)
    }

    /// hostile31c F14: `before-restore` and labelled snapshots do not push out the newest
    /// `before-migrate` of each of the last `keep` versions; later migrations do.
    @Test func beforeMigrateSnapshotsAreKeptFromTheCountOfOtherSnapshots() {
        func named(_ daysAgo: Double, _ version: Int, _ reason: String) -> SnapshotInfo {
            let name = "\(Timestamp.compact(Self.now.addingTimeInterval(-daysAgo * 86_400)))-v\(version)-\(reason)"
            return SnapshotInfo(name: name, version: version, createdAt: SnapshotStore.createdAt(fromName: name), sizeBytes: 1, path: "/x/" + name)
        }
        // Newest first: three before-restore at v3, v2's before-migrate, an older one of v2, v1's.
        let list = [
            named(0, 3, "before-restore"), named(1, 3, "before-restore"), named(2, 3, "before-restore"),
            named(3, 2, "before-migrate"), named(4, 2, "before-migrate-2"), named(5, 1, "before-migrate"),
        ]
        let names = { (expired: [SnapshotInfo]) in expired.map(\.name) }
        #expect(names(SnapshotRetention(keep: 2).expired(list, now: Self.now, protected: [])) == names([list[2], list[4]]))
        #expect(names(SnapshotRetention(keep: 1).expired(list, now: Self.now, protected: [])) == names([list[1], list[2], list[4], list[5]]))
        #expect(SnapshotRetention.beforeMigrateVersion("20261121T061000.123Z-v12-before-migrate") == 12)
        #expect(SnapshotRetention.beforeMigrateVersion("20261121T061000.123Z-v12-before-restore") == nil)
    }

    /// Through the store: taking a snapshot removes those older than the age, never the
    /// newest, and a restore keeps the old snapshot it restores.
    @Test func takingASnapshotAppliesTheAgeAndRestoreKeepsItsSource() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let bundle = try BundleFixture.write(at: dir.sub("b"), steps: ["CREATE TABLE t (a);"])
        var options = AccountStore.Options()
        options.snapshotsToKeep = 10
        options.snapshotMaxAgeDays = 7
        let store = AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle), options: options)
        _ = try store.open(alice)
        let first = try store.takeSnapshot(alice)
        let folder = store.root.snapshotDirectory(alice)
        func plant(daysAgo days: Double) throws -> String {
            let name = "\(Timestamp.compact(Date().addingTimeInterval(-days * 86_400)))-v1-manual"
            try FileManager.default.copyItem(atPath: first.path, toPath: folder + "/" + name + ".sqlite")
            return name
        }
        let old = try plant(daysAgo: 30)
        let recent = try plant(daysAgo: 3)
        let taken = try store.takeSnapshot(alice, label: SnapshotLabel("weekly"))
        #expect(taken.name.hasSuffix("-v1-weekly"))
        #expect(store.listSnapshots(alice).map(\.name) == [taken.name, first.name, recent])

        let older = try plant(daysAgo: 60)
        let (restored, saved) = try store.restore(alice, snapshot: older)
        #expect(restored.name == older)
        let after = store.listSnapshots(alice).map(\.name)
        #expect(after.contains(older), "the restored snapshot was pruned: \(after)")
        #expect(after.contains(try #require(saved?.name)))
        #expect(!after.contains(old))
    }
}
