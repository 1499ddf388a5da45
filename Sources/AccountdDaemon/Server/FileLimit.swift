import Foundation

/// The open files the daemon may need at once, and a process file limit
/// (`RLIMIT_NOFILE`) that holds them.
///
/// Each connection is one descriptor, so `limits.maxConnections` only means something
/// when the file limit leaves room for every connection plus what the daemon itself
/// keeps open. Past the limit, `accept` fails and SQLite cannot open files, which would
/// look like corruption to a client. So the daemon checks at start-up: it raises its
/// soft limit up to the hard limit when it needs more (systemd sets a low soft limit
/// for the sake of `select`, which accountd does not use), and refuses to start,
/// naming both numbers, when even the hard limit is too small.
struct FileLimit: Sendable {
    /// A soft and a hard `RLIMIT_NOFILE`.
    struct Limits: Sendable, Equatable {
        var soft: UInt64
        var hard: UInt64
    }

    /// Files the daemon may open besides its connections.
    ///
    /// - fixed: standard input, output and error, the journal socket, the systemd notify
    ///   socket, the listening socket, the data-root lock, `state.json` (kept open),
    ///   and a few for the runtime: 16;
    /// - `device.sqlite` and the preference tables kept open (``PreferenceService/openAccountLimit``
    ///   accounts), each a database with its `-wal` and `-shm`: 3 each;
    /// - each event loop's epoll, eventfd and timerfd: 3 each;
    /// - each blocking thread at work on an account: the account file with its `-wal` and
    ///   `-shm`, and a snapshot or export copy with its journal: 6 each;
    /// - headroom for everything counted low: 64.
    static func reserve(eventLoops: Int, blockingThreads: Int) -> Int {
        16 + 3 * (PreferenceService.openAccountLimit + 1) + 3 * eventLoops + 6 * blockingThreads + 64
    }

    /// `limits.maxConnections`.
    let maximumConnections: Int
    let eventLoops: Int
    let blockingThreads: Int

    /// What the daemon needs: one per connection plus ``reserve(eventLoops:blockingThreads:)``.
    var required: Int { maximumConnections + Self.reserve(eventLoops: eventLoops, blockingThreads: blockingThreads) }

    /// Why the daemon cannot start with this file limit.
    struct TooLow: Error, CustomStringConvertible {
        var description: String
    }

    /// The process's `RLIMIT_NOFILE`.
    static var current: Limits {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Limits(soft: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max))
    }

    /// Makes sure the process may open ``required`` files, raising the soft limit toward the
    /// hard limit when it must; returns the limits before and after.
    ///
    /// - Throws: ``TooLow`` naming `limits.maxConnections`, what it needs, the limit, and
    ///   what to do, when even the hard limit is too small.
    func ensure() throws -> (before: Limits, after: Limits) {
        let before = Self.current
        let needed = UInt64(required)
        if before.soft < needed && before.hard > before.soft {
            // The hard limit itself, else (when the kernel refuses that, as for an unlimited
            // hard limit above fs.nr_open) just what is needed.
            var raised = rlimit(rlim_cur: rlim_t(before.hard), rlim_max: rlim_t(before.hard))
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) != 0 && needed <= before.hard {
                raised.rlim_cur = rlim_t(needed)
                _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
            }
        }
        let after = Self.current
        guard after.soft < needed else { return (before, after) }
        let reserve = required - maximumConnections
        let fits = Int(clamping: after.soft) - reserve
        var remedy = "raise the file limit to at least \(required) (LimitNOFILE=\(required) in the unit, or ulimit -n \(required))"
        if fits >= 1 { remedy = "lower limits.maxConnections to at most \(fits), or " + remedy }
        throw TooLow(
            description: "limits.maxConnections is \(maximumConnections), which needs up to \(required) open files "
                + "(\(maximumConnections) connections and \(reserve) for account files with their -wal and -shm, device.sqlite, "
                + "the journal, the event loops and headroom), but this process may open at most \(after.soft) files "
                + "(RLIMIT_NOFILE soft \(after.soft), hard \(after.hard)); \(remedy)")
    }
}
