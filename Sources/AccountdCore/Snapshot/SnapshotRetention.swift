import Foundation

/// Which of an account's snapshots are kept: by count, and optionally by age.
///
/// Retention runs each time a snapshot of the account is taken (before a migration,
/// a restore or a removal, and on demand). A snapshot goes when it is beyond the
/// newest ``keep`` **or** older than ``maximumAgeDays`` (when that is above 0), with
/// two exceptions that always hold: the snapshot just taken is kept, so an account
/// that has snapshots always keeps its newest, and the snapshot being restored is
/// kept (it goes on a later run, if the rules still say so).
///
/// The count never removes the newest `before-migrate` snapshot of each of the last ``keep``
/// versions the account was migrated from (``recoveryPoints(_:)``): it is what an older app
/// version (and `migrate --rollback-to`) can open, so `before-restore` and labelled snapshots,
/// however many, do not push it out; only later migrations do. It still counts as one of the
/// ``keep``, and the age rule, when set, removes it like any other.
///
/// A snapshot's age is read from the timestamp at the start of its name (the same one
/// `createdAt` reports), not from the file's modification time, which a copy or a
/// backup tool may change. A name without a readable timestamp is never removed for
/// its age, only for the count; so is a name dated more than ``SnapshotOrder/slack``
/// in the future (taken while the clock was set ahead), which ``SnapshotOrder`` lists
/// after every other snapshot, so the count removes it first.
public struct SnapshotRetention: Sendable, Hashable {
    /// How many snapshots to keep per account; at least 1.
    public var keep: Int
    /// Snapshots older than this many days go; 0 keeps by count only.
    public var maximumAgeDays: Int

    public init(keep: Int, maximumAgeDays: Int = 0) {
        precondition(keep >= 1 && maximumAgeDays >= 0, "retention needs keep >= 1 and maximumAgeDays >= 0")
        self.keep = keep
        self.maximumAgeDays = maximumAgeDays
    }

    /// The snapshots of `snapshots` (newest first, as ``SnapshotOrder`` orders them) that
    /// retention removes at `now`.
    ///
    /// - Parameter protected: names that stay whatever the rules say: the snapshot just
    ///   taken, and the one being restored.
    func expired(_ snapshots: [SnapshotInfo], now: Date, protected: Set<String>) -> [SnapshotInfo] {
        let oldest = maximumAgeDays > 0 ? now.addingTimeInterval(-Double(maximumAgeDays) * 86_400) : nil
        let recovery = recoveryPoints(snapshots)
        return snapshots.enumerated().compactMap { position, snapshot in
            guard !protected.contains(snapshot.name) else { return nil }
            let beyondCount = position >= keep && !recovery.contains(snapshot.name)
            let tooOld = oldest.map { oldest in SnapshotStore.takenAt(fromName: snapshot.name).map { $0 < oldest } ?? false } ?? false
            return beyondCount || tooOld ? snapshot : nil
        }
    }

    /// The names of the newest `before-migrate` snapshot of each of the last ``keep`` versions
    /// in `snapshots` (newest first): the ones the count never removes.
    func recoveryPoints(_ snapshots: [SnapshotInfo]) -> Set<String> {
        var seen = Set<Int>()
        var names = Set<String>()
        for snapshot in snapshots where seen.count < keep {
            guard let version = Self.beforeMigrateVersion(snapshot.name), seen.insert(version).inserted else { continue }
            names.insert(snapshot.name)
        }
        return names
    }

    /// `N` for a name `<timestamp>-vN-before-migrate` (or `...-before-migrate-2`, two taken within one
    /// millisecond); nil for any other name.
    static func beforeMigrateVersion(_ name: String) -> Int? {
        let parts = name.split(separator: "-", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].first == "v", let version = Int(parts[1].dropFirst()),
            parts[2] == "before-migrate" || parts[2].hasPrefix("before-migrate-")
        else { return nil }
        return version
    }
}
