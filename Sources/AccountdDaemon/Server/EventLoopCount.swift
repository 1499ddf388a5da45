import Glibc
import NIOCore

/// How many event loops the daemon runs: one fewer than the cores NIO counts
/// (`System.coreCount`: a CPU quota at the root of the cgroup filesystem, as in a container;
/// else the cpuset of the process's own cgroup; else the CPUs online), and at least one.
///
/// accountd's clients are local processes on the same cores. A loop with requests waiting
/// never sleeps, so with a loop on every core each client that wakes to read its reply
/// preempts a loop, and the loop waits behind it; one core left without a loop is where the
/// clients run. On two cores one loop answered a `Status` at 50 clients 8% faster than two
/// (docs/PERFORMANCE.md).
public enum EventLoopCount {
    /// The environment variable of NIO's that, when set, decides the count instead.
    static let override = "NIO_SINGLETON_GROUP_LOOP_COUNT"

    /// The count for `cores` usable cores.
    static func loops(forCores cores: Int) -> Int { max(1, cores - 1) }

    /// Sets the size of NIO's shared event loop group (the daemon's sockets and timers run on
    /// it) unless `NIO_SINGLETON_GROUP_LOOP_COUNT` is set to a whole number (NIO then takes it,
    /// kept between 1 and 1,024). A value that is not a whole number is said on standard error
    /// and ignored.
    /// Call once, in `main`, before anything uses the group: NIO refuses a change after that.
    public static func configure() {
        let count = loops(forCores: System.coreCount)
        if let set = getenv(override).map({ String(cString: $0) }) {
            if Int(set) != nil { return }
            let said = "accountd: \(override)=\(set) is not a whole number; ignored: \(count) event loop(s), one fewer than the \(System.coreCount) core(s)\n"
            _ = said.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        }
        NIOSingletons.groupLoopCountSuggestion = count
    }
}
