import Foundation

/// The order of an account's snapshots, newest first, that a clock set wrong once cannot upset.
///
/// A snapshot's time is the timestamp its name begins with, read from the clock when it
/// was taken. A clock that was once set ahead (a machine that booted with a bad clock and
/// corrected it later) leaves names dated in the future; ordered by name alone, such a
/// snapshot would stay "newest" for good: a plain restore would pick it, and retention would
/// keep it while removing every real snapshot beside it. So a name dated more than
/// ``slack`` after now is not believed: it is listed after every snapshot whose time is
/// believable (as the oldest), so a plain restore picks it only when nothing else is left and
/// retention by count removes it first. Its age is unknown, so the age rule never removes it.
/// Among themselves, believable snapshots and suspect ones are each ordered by name, newest
/// first; a name without a timestamp counts as believable, as before.
///
/// A clock that is set back (the others now look future-dated) changes nothing that matters:
/// the old snapshots keep their order among themselves, and the ones taken since, dated by
/// the clock as it is now, come first, which they are.
public enum SnapshotOrder {
    /// How far past now a snapshot may be dated and still be believed: room for clocks that
    /// step back a little (NTP) after a snapshot was taken.
    public static let slack: TimeInterval = 600

    /// Whether the snapshot called `name` is dated more than ``slack`` after `now`.
    public static func isFutureDated(_ name: String, now: Date) -> Bool {
        guard let taken = SnapshotStore.takenAt(fromName: name) else { return false }
        return taken.timeIntervalSince(now) > slack
    }

    /// `names` newest first, future-dated ones last.
    public static func newestFirst(_ names: [String], now: Date) -> [String] {
        names.map { (name: $0, suspect: isFutureDated($0, now: now)) }
            .sorted { a, b in a.suspect != b.suspect ? !a.suspect : a.name > b.name }
            .map(\.name)
    }
}
