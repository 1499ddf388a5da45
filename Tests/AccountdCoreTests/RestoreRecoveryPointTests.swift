import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

@testable import AccountdCore

/// Going back to an older app (hostile31c F14): a plain restore brings back the newest snapshot the
/// installed bundle can open, a too-new one is refused before anything is touched, and retention
/// keeps the `before-migrate` snapshot an older app needs however many other snapshots follow it.
@Suite struct RestoreRecoveryPointTests {
    /// An account created at version 1, migrated to 2 (its `v1-before-migrate` taken), then
    /// snapshotted `extra` times at version 2 (label `nightly`); returns the stores of both
    /// bundles (keeping `keep` snapshots) and the `before-migrate` snapshot's name.
    static func upgraded(_ dir: borrowing TestDirectory, keep: Int, extra: Int) throws -> (old: AccountStore, new: AccountStore, beforeMigrate: String) {
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: ["CREATE TABLE t (a);"])
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: ["CREATE TABLE t (a);", "ALTER TABLE t ADD COLUMN b;"])
        var options = AccountStore.Options()
        options.snapshotsToKeep = keep
        let root = try DataRoot(dir.sub("root"))
        let alice = try AccountName("alice")
        let old = AccountStore(root: root, bundle: try SchemaBundle.load(from: v1), options: options)
        _ = try old.open(alice)
        let new = AccountStore(root: root, bundle: try SchemaBundle.load(from: v2), options: options)
        _ = try new.open(alice)
        let beforeMigrate = try #require(new.listSnapshots(alice).first { $0.name.hasSuffix("-v1-before-migrate") }).name
        for _ in 0..<extra {
            Thread.sleep(forTimeInterval: 0.005)  // the clock must advance, so the snapshots' times differ
            _ = try new.takeSnapshot(alice, label: try SnapshotLabel("nightly"))
        }
        return (old, new, beforeMigrate)
    }

    @Test func aPlainRestorePicksTheNewestSnapshotTheBundleCanOpen() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let (old, _, beforeMigrate) = try Self.upgraded(dir, keep: 5, extra: 1)
        #expect(old.listSnapshots(alice).first?.version == 2)
        let (restored, saved) = try old.restore(alice, snapshot: nil)
        #expect(restored.name == beforeMigrate)
        #expect(saved?.version == 2)
        #expect(try old.open(alice).version == 1)
    }

    @Test func aTooNewSnapshotIsRefusedBeforeAnythingChanges() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let (old, _, beforeMigrate) = try Self.upgraded(dir, keep: 5, extra: 1)
        let before = old.listSnapshots(alice).map(\.name)
        let nightly = try #require(before.first)
        let error = #expect(throws: AccountdError.self) { try old.restore(alice, snapshot: nightly) }
        #expect(error?.kind == .accountTooNew)
        #expect(error?.message.contains(beforeMigrate) == true, "\(String(describing: error?.message))")
        #expect(old.listSnapshots(alice).map(\.name) == before, "a refused restore took a snapshot")
    }

    @Test func userSnapshotsDoNotPushOutTheBeforeMigrateSnapshot() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let (old, _, beforeMigrate) = try Self.upgraded(dir, keep: 2, extra: 6)
        let names = old.listSnapshots(alice).map(\.name)
        #expect(names.contains(beforeMigrate), "\(names)")
        #expect(names.count == 3)
        #expect(try old.restore(alice, snapshot: nil).restored.name == beforeMigrate)
    }
}
