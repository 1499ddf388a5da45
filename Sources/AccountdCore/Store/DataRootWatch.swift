import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Tells an unlocked read whether the names it checks by path in the data root may have
/// changed since it last looked: the data root's entries (`accounts`, `snapshots`, `moved`),
/// those of `snapshots/` and those of `moved/`, watched with inotify.
///
/// The kernel queues an event in the same call that creates, removes, renames or replaces
/// such an entry, whoever makes it (this daemon, a tool, someone by hand). So a read that
/// finds no event pending (``isQuiet``, one `poll` with no wait) may rely on what the last
/// check by path found, as long as that check began after the events before it were
/// drained (``drain()``); a read that finds one pending drains them and checks by path
/// again. ``generation`` counts the drains: a check remembered with the generation read
/// before it began is stale once another read drained events. Where inotify cannot be had (``init(root:)`` returns nil), every read checks by
/// path, as before.
///
/// The contents of `accounts/` are not watched: the account's file is looked at by path on
/// every read anyway (its identity, ``SQLConnectionCache/takeIdle(_:checkedUnder:path:readOnly:)``).
public final class DataRootWatch: Sendable {
    private let descriptor: Int32
    private let root: String
    private let drains = Atomic<UInt64>(0)

    /// How many times events were drained: changes after a drain that found events.
    public var generation: UInt64 { drains.load(ordering: .acquiring) }

    /// Watches `root` (the data root's path); nil when inotify cannot be had.
    public init?(root: String) {
        let fd = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        descriptor = fd
        self.root = root
        guard arm() else {
            close(fd)
            return nil
        }
    }

    deinit { close(descriptor) }

    /// Whether no change to the watched names is pending: one `poll` that does not wait.
    public var isQuiet: Bool {
        var watched = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&watched, 1, 0) == 0
    }

    /// Reads away the pending events and watches the folders again (a `snapshots/` or `moved/`
    /// made or replaced since is watched from now on). Call it before checking by path.
    public func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(descriptor, &buffer, buffer.count) > 0 {}
        _ = arm()
        drains.wrappingAdd(1, ordering: .acquiringAndReleasing)
    }

    /// Adds (or renews) the watches; false when the data root itself cannot be watched.
    private func arm() -> Bool {
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW)
        guard inotify_add_watch(descriptor, root, mask) >= 0 else { return false }
        // Missing folders are not watched; their creation is an event at the root.
        for name in ["snapshots", "moved"] { _ = inotify_add_watch(descriptor, root + "/" + name, mask | UInt32(IN_ONLYDIR)) }
        return true
    }
}
