import Foundation

/// What an earlier accountd on this data root left of its `litestream` commands when it died
/// without its shutdown (`kill -9`, a crash, the machine's OOM killer): the children still
/// running (an orphaned `litestream restore` goes on fetching and writing its staging file),
/// the private configurations under `tmp/` that name the replica with its password, and the
/// staging files of pulls and restores at a time.
///
/// Cleared at start-up, under the data root's lock (``DataRootLock`` in the daemon, and in
/// `accountd pull`), so no command of a live process is touched: every such child is
/// recognised by its command line naming a configuration under this data root's `tmp/`
/// (`-config <root>/tmp/litestream-*.yml`), which only accountd writes. Under systemd the
/// unit's control group takes the children down with the daemon already; this covers the
/// rest.
extension DataRoot {
    /// The prefixes of the private configurations a `litestream` command runs with.
    static var litestreamConfigPrefixes: [String] { [ReplicaCommand.configPrefix, ReplicaPull.restoreConfigPrefix] }

    /// What ``clearLitestreamLeftovers()`` found.
    public struct LitestreamLeftovers: Sendable {
        /// The `litestream` children of an earlier run that were killed.
        public var stopped: [Int32] = []
        /// How many configuration and staging files were removed.
        public var removed = 0
    }

    /// Kills the `litestream` children an earlier accountd on this data root left running
    /// and waits (up to 2 s) until they are gone, then removes their configurations from
    /// `tmp/` and the staging files of pulls and restores at a time from `accounts/`. Call
    /// with the data root's lock held, before anything runs Litestream. Blocking.
    ///
    /// - Throws: `accountCorrupt` when `tmp` or `accounts` is a link or not a folder;
    ///   `storage` when a leftover cannot be removed.
    @discardableResult
    public func clearLitestreamLeftovers() throws -> LitestreamLeftovers {
        var found = LitestreamLeftovers()
        let marker = temporaryDirectory + "/litestream-"
        for pid in Self.processes(namingConfigurationUnder: marker) where kill(pid, SIGKILL) == 0 {
            found.stopped.append(pid)
        }
        var waited = 0
        while waited < 200, found.stopped.contains(where: { Self.isRunning($0) }) {
            usleep(10_000)
            waited += 1
        }
        if let temporary = try folder.subfolder("tmp") {
            // `.<name>.tmp-*`: one being written (``FileSystem/atomicWrite(_:to:)``) when the process died.
            for name in temporary.names() where Self.litestreamConfigPrefixes.contains(where: { name.hasPrefix($0) || name.hasPrefix("." + $0) }) {
                try temporary.remove(name)
                found.removed += 1
            }
        }
        if let accounts = try accountsFolder() {
            let stagings = [Staging.pulling, .rewinding].map { ".sqlite." + $0.rawValue }
            for name in accounts.names() where name.hasPrefix(".") {
                let stem = ["-wal", "-shm", "-journal"].first(where: { name.hasSuffix($0) }).map { String(name.dropLast($0.count)) } ?? name
                guard stagings.contains(where: { stem.hasSuffix($0) }) else { continue }
                try accounts.remove(name)
                found.removed += 1
            }
        }
        return found
    }

    /// The processes (other than this one) with an argument that is a `.yml` file whose
    /// path begins with `marker`, from `/proc/<pid>/cmdline`.
    static func processes(namingConfigurationUnder marker: String) -> [Int32] {
        let own = getpid()
        var found: [Int32] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), pid != own,
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { continue }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.contains(where: { $0.hasPrefix(marker) && $0.hasSuffix(".yml") }) { found.append(pid) }
        }
        return found
    }

    /// Whether `pid` still runs: it exists and is not a zombie waiting to be reaped.
    static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return !stat[close...].hasPrefix(") Z") && !stat[close...].hasPrefix(") X")
    }
}
