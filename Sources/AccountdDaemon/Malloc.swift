import CMalloc
import Foundation

/// The daemon's two settings of glibc's malloc.
enum Malloc {
    /// Bounds glibc's malloc arenas to the number of cores.
    ///
    /// glibc gives a thread that meets contention in malloc an arena of its own, up to eight
    /// per core, and keeps the memory freed in each arena for reuse there. The daemon's
    /// blocking pool has four threads per core and more, and a fleet migration opens and closes an
    /// SQLite connection on each of them thousands of times: with the default, the resident
    /// size grew by 11 MB over 20,000 migrated accounts and by 33 MB over 100,000, while the
    /// memory in use stayed flat. With one arena per core it stays within about 6 MB of idle
    /// (docs/PERFORMANCE.md). Called before the daemon starts its threads; an environment's own
    /// `MALLOC_ARENA_MAX` is left alone.
    static func boundArenas() {
        guard ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil else { return }
        _ = mallopt(M_ARENA_MAX, Int32(max(ProcessInfo.processInfo.activeProcessorCount, 1)))
    }

    /// Hands the memory freed in every arena back to the system (`malloc_trim`), after work
    /// that allocated and freed much of it, such as a `Migrate` of a whole fleet: glibc keeps
    /// freed memory for reuse, and the resident size would otherwise stay at its peak.
    static func trim() {
        _ = malloc_trim(0)
    }
}
