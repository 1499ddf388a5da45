import Foundation
import Synchronization

/// The last upload of each account that Litestream reported (its `last_sync_at`), kept so
/// that the lag keeps growing while Litestream is down or does not answer (hostile33c #10):
/// an unknown lag is never reported as none.
///
/// An account whose upload was never seen counts from when this memory began (the daemon's
/// start): accountd cannot say the replica had it at any later time.
final class UploadMemory: Sendable {
    private let uploads = Mutex<[String: Date]>([:])
    /// When the memory began: the daemon's start.
    let started: Date

    init(started: Date = Date()) { self.started = started }

    /// Since when each account Litestream lists but has never uploaded has had changes
    /// waiting, as first seen here (hostile33e #8): Litestream's failing uploads touch the
    /// file, so its modification time read again would make the lag start over.
    private let waiting = Mutex<[String: Date]>([:])

    /// Records the uploads Litestream just reported, by account file path; an account
    /// uploaded, or no longer listed, waits no more.
    func remember(_ uploads: [String: Date], listed: some Sequence<String>) {
        self.uploads.withLock { known in
            for (path, time) in uploads { known[path] = max(known[path] ?? time, time) }
        }
        let listed = Set(listed)
        waiting.withLock { waiting in
            waiting = waiting.filter { listed.contains($0.key) && uploads[$0.key] == nil }
        }
    }

    /// Seconds the changes of a never-uploaded account at `path` have waited: since the
    /// time first seen for it (`newestChange`, its file's newest modification, the first
    /// time it is asked), kept until it is uploaded. Nil when nothing is known.
    func secondsWaiting(_ path: String, newestChange: Date?, now: Date) -> Double? {
        let since = waiting.withLock { waiting -> Date? in
            if let known = waiting[path] { return known }
            waiting[path] = newestChange
            return newestChange
        }
        return since.map { max(0, now.timeIntervalSince($0)) }
    }

    /// Seconds since the last upload of the account at `path` seen here (or since ``started``).
    func secondsSinceUpload(_ path: String, now: Date) -> Double {
        let last = uploads.withLock { $0[path] } ?? started
        return max(0, now.timeIntervalSince(last))
    }
}
