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

    /// Records the uploads Litestream just reported, by account file path.
    func remember(_ uploads: [String: Date]) {
        self.uploads.withLock { known in
            for (path, time) in uploads { known[path] = max(known[path] ?? time, time) }
        }
    }

    /// Seconds since the last upload of the account at `path` seen here (or since ``started``).
    func secondsSinceUpload(_ path: String, now: Date) -> Double {
        let last = uploads.withLock { $0[path] } ?? started
        return max(0, now.timeIntervalSince(last))
    }
}
