import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

/// Helpers for the hostile-conditions tests (stream fuzz, limits, faults, security).
enum Hostile {
    /// Sends pipelined pings without reading any reply, for up to `seconds`, until the daemon
    /// stops taking them: the socket is full, and takes nothing more for 0.2 s. Returns the bytes
    /// it took, and whether it stopped.
    static func floodWithPings(_ client: RawClient, seconds: TimeInterval = 5) -> (sent: Int, blocked: Bool) {
        let pings = [UInt8](String(repeating: "ping\n", count: 4096).utf8)
        var sent = 0
        let until = Date().addingTimeInterval(seconds)
        while Date() < until {
            var n = client.sendNonBlocking(pings)
            if n == 0 {
                // Full: the daemon has stopped reading if it takes no more within 0.2 s.
                guard waitUntil(timeout: 0.2, interval: 0.005, { n = client.sendNonBlocking(pings); return n != 0 }) else { return (sent, true) }
            }
            guard n > 0 else { break }
            sent += n
        }
        return (sent, false)
    }

    // MARK: - Randomness

    /// The shared seeded generator.
    typealias Random = SeededRandom

    // MARK: - The daemon process

    /// The daemon's resident set size in KiB (`VmRSS` in `/proc/PID/status`), or nil.
    static func rssKiB(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// The `p`-th percentile (0...1) of `values`.
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// A client with its own receive timeout (the default one waits 60 s).
    static func client(_ socket: String, timeout seconds: Int = 10) throws -> RawClient {
        let client = try RawClient(socket: socket)
        client.setReceiveTimeout(seconds)
        return client
    }

    /// A client used by two threads at once: one only sends, the other only reads.
    ///
    /// `@unchecked Sendable` is sound here: `send` and `finishSending` touch only the
    /// client's immutable descriptor, and `readLine` (which owns the client's framing
    /// buffer) is called from the reading thread alone.
    final class SharedClient: @unchecked Sendable {
        let client: RawClient
        init(_ client: RawClient) { self.client = client }
    }

    /// A client of `daemon` that has sent `set switch <key> <value>` and waits for its reply:
    /// the table is opened by a first Set, then another process holds `device.sqlite`'s write
    /// lock, so the Set's commit waits until `release` is called.
    ///
    /// It returns once the daemon has read the Set (``RawClient/bytesUnreadByPeer`` is 0): the
    /// daemon starts a request in the same event-loop turn that reads its line, so the Set is
    /// then in progress. Before it is read, the connection is idle, and a SIGTERM then closes it
    /// with the Set unread and unanswered, as PROTOCOL.md allows ("Requests the daemon had not
    /// yet read ... get no reply"): a test that signals at once would race the daemon's read.
    static func clientWithASetWaitingForItsCommit(
        _ daemon: DaemonProcess, key: String, value: String
    ) throws -> (client: RawClient, release: @Sendable () -> Void) {
        let client = try Hostile.client(daemon.socket, timeout: 20)
        #expect(try client.callOne("set switch warm 1").error == nil)
        let release = try holdWriteLock(daemon.dataRoot + "/device.sqlite")
        try client.send("set switch \(key) \(value)\n")
        let read = waitUntil(timeout: 20) { client.bytesUnreadByPeer == 0 }
        if !read { release() }
        try #require(read, "accountd did not read `set switch \(key)` within 20 s (\(client.bytesUnreadByPeer) bytes unread); its log:\n\(daemon.log)")
        return (client, release)
    }

    /// Takes `database`'s write lock from this process, as another program would, and holds
    /// it until the returned function is called: a daemon's commit to that file waits meanwhile.
    static func holdWriteLock(_ database: String) throws -> @Sendable () -> Void {
        let holder = try DatabaseQueue(path: database)
        let locked = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread {
            try? holder.inTransaction(.immediate) { _ in
                locked.signal()
                release.wait()
                return .commit
            }
        }.start()
        locked.wait()
        return { release.signal() }
    }

    // MARK: - Files

    /// The entries of a folder, sorted; empty when it does not exist.
    static func listing(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// `PRAGMA integrity_check` of a file, through the `sqlite3` shell (which recovers a hot WAL first).
    static func integrity(_ path: String) -> String {
        (try? E2E.sql(path, "PRAGMA integrity_check;")) ?? "sqlite3 could not open \(path)"
    }

    /// The file's inode number.
    static func inode(_ path: String) -> UInt64? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return UInt64(info.st_ino)
    }

    /// Free bytes on the filesystem holding `path`.
    static func freeBytes(_ path: String) -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Writes a file of `count` zero bytes (in 64 KiB pieces); returns how many bytes fit.
    @discardableResult
    static func fill(_ path: String, bytes count: Int) -> Int {
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 65536)
        var written = 0
        while written < count {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, min(chunk.count, count - written)) }
            if n <= 0 { break }
            written += n
        }
        return written
    }

    /// Fills the filesystem holding `folder` with a file at `path` until `leave` bytes are free.
    static func fillLeaving(_ leave: Int, folder: String, path: String) {
        let free = freeBytes(folder)
        if free > leave { fill(path, bytes: free - leave) }
    }

    // MARK: - A small tmpfs

    /// A tmpfs of a given size mounted over a folder, for running out of space on purpose.
    final class Tmpfs {
        let path: String
        private var mounted = true

        /// Mounts a tmpfs of `kibibytes` at `path`; nil when mounting is not possible here
        /// (not root, or no CAP_SYS_ADMIN in this container).
        init?(at path: String, kibibytes: Int) {
            self.path = path
            try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let result = try? E2E.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kibibytes)k,mode=0700", "tmpfs", path])
            guard result?.status == 0 else { return nil }
        }

        /// Mounts a tmpfs of `kibibytes` at `path`, or cancels the running test saying why.
        static func mounted(at path: String, kibibytes: Int) throws -> Tmpfs {
            guard let tmpfs = Tmpfs(at: path, kibibytes: kibibytes) else {
                print("\(Test.current?.name ?? "a test"): skipped, cannot mount a tmpfs here (mount needs root with CAP_SYS_ADMIN)")
                try Test.cancel("cannot mount a tmpfs here (mount needs root with CAP_SYS_ADMIN)")
            }
            return tmpfs
        }

        /// Grows (or shrinks) the mounted filesystem.
        func resize(kibibytes: Int) throws {
            let result = try E2E.run("/bin/mount", ["-o", "remount,size=\(kibibytes)k", path])
            try #require(result.status == 0, "remount failed: \(result.stderr)")
        }

        /// Unmounts (lazily if something still holds a file open). Safe to call twice.
        func unmount() {
            guard mounted else { return }
            mounted = false
            if (try? E2E.run("/bin/umount", [path]))?.status != 0 {
                _ = try? E2E.run("/bin/umount", ["-l", path])
            }
        }

        deinit { unmount() }
    }

    // MARK: - Bundles

    /// One table of items, created by the first migration.
    static let itemV1 = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL);\n"
    /// A table rebuild with two indexes: the kind of migration that rewrites every row.
    static let itemV2 = """
        CREATE TABLE item_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL, extra TEXT NOT NULL DEFAULT 'x');
        INSERT INTO item_new (id, name, n) SELECT id, name, n FROM item ORDER BY name;
        DROP TABLE item;
        ALTER TABLE item_new RENAME TO item;
        CREATE INDEX item_name ON item(name, n);
        CREATE INDEX item_extra ON item(extra, name);

        """
    /// What must not change in `item` across a migration: count and sums.
    static let itemChecksum = "SELECT count(*), sum(id), sum(n), sum(length(name)) FROM item;"

    /// Makes `account` at version 1 of `bundle` under `dataRoot`, with `rows` items, checkpointed.
    static func makeItemAccount(_ account: String, rows: Int, dataRoot: String, bundle: String) throws {
        try E2E.createOffline(account, dataRoot: dataRoot, bundle: bundle)
        try E2E.sql(dataRoot + "/accounts/\(account).sqlite", E2E.insertRows("item", count: rows) + "\nPRAGMA wal_checkpoint(TRUNCATE);")
    }

    // MARK: - Replies

    /// Reads reply lines until `predicate` holds for one (returned) or the connection ends (nil).
    static func readUntil(_ client: RawClient, _ predicate: (Reply) -> Bool) -> Reply? {
        while let line = try? client.readLine() {
            guard let reply = try? Reply.decode(Array(line.utf8)) else { continue }
            if predicate(reply) { return reply }
        }
        return nil
    }
}

extension RawClient {
    /// Sets how long `readLine` waits for bytes before it throws.
    func setReceiveTimeout(_ seconds: Int, microseconds: Int = 0) {
        var timeout = timeval(tv_sec: seconds, tv_usec: microseconds)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Makes `close` send a reset instead of an orderly end of stream.
    func abortOnClose() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// Whether the peer has closed the connection and nothing is left to read, without waiting.
    func isClosedNow() -> Bool {
        var byte: UInt8 = 0
        let got = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Waits up to `timeout` seconds for something to read (or the end of stream); returns
    /// whether it came.
    func waitUntilReadable(timeout: TimeInterval) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, Int32(timeout * 1000)) > 0
    }

    /// How many bytes this client sent that the peer has not read yet: `SIOCOUTQ` on a Unix
    /// stream socket (Linux; the same request number as `TIOCOUTQ`); -1 when it cannot be asked.
    var bytesUnreadByPeer: Int {
        var count: Int32 = 0
        return ioctl(fd, UInt(TIOCOUTQ), &count) == 0 ? Int(count) : -1
    }

    /// How many received bytes wait to be read (`FIONREAD`).
    var bytesWaiting: Int {
        var count: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &count) == 0 ? Int(count) : 0
    }

    /// Sends what it can without blocking; returns the bytes the kernel took (0 when the
    /// socket buffer is full, -1 when the connection is gone).
    func sendNonBlocking(_ bytes: [UInt8]) -> Int {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        if sent >= 0 { return sent }
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1
    }
}
