import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Small helpers shared by the end-to-end tests.
enum E2E {
    // MARK: - Starting processes
    //
    // Foundation's Process on Linux can fail to spawn with EBADF when another thread of the
    // test runner closes a file descriptor at the same moment (tests run in parallel). The
    // child never started then, so trying again is safe.

    /// Runs `body`, trying again when it failed only because a process could not be spawned.
    static func spawning<T>(_ body: () throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try body()
            } catch let error as NSError where attempt < 5 && isSpawnRace(error) {
                attempt += 1
                Thread.sleep(forTimeInterval: 0.02 * Double(attempt))
            }
        }
    }

    private static func isSpawnRace(_ error: NSError) -> Bool {
        guard error.domain == NSCocoaErrorDomain, let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError else { return false }
        return underlying.domain == NSPOSIXErrorDomain && underlying.code == Int(EBADF)
    }

    /// `runAccountctl`, robust against the spawn race.
    static func accountctl(_ arguments: [String], socket: String, environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        try spawning { try runAccountctl(arguments, socket: socket, environment: environment) }
    }

    /// `runProgram`, robust against the spawn race.
    static func run(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        try spawning { try runProgram(path, arguments, environment: environment) }
    }

    /// `Files.sqlite3`, robust against the spawn race.
    @discardableResult
    static func sqlite3(_ database: String, _ script: String) throws -> String {
        try spawning { try Files.sqlite3(database, script) }
    }

    /// A started `DaemonProcess`, robust against the spawn race.
    static func daemon(directory: String, bundle: String = Repository.sampleBundle, environment: [String: String] = [:]) throws -> DaemonProcess {
        try spawning { try DaemonProcess(directory: directory, bundle: bundle, environment: environment) }
    }

    /// A daemon on a bundle written from `steps`, with account `alice` created by the daemon
    /// and then filled by `sqlite3` running `fill`.
    static func daemonWithAlice(_ dir: borrowing TestDirectory, steps: [String], fill: String) throws -> DaemonProcess {
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: steps)
        let daemon = try daemon(directory: dir.path, bundle: bundle)
        let switched = try daemon.client().callOne("switch alice")
        try #require(switched.error == nil, "\(switched.parameters)")
        try #require(switched.parameters["action"] == "created")
        try sql(daemon.accountPath("alice"), fill)
        return daemon
    }

    /// Runs `sqlite3` on `database` and returns its output without the trailing newline.
    @discardableResult
    static func sql(_ database: String, _ script: String) throws -> String {
        var out = try sqlite3(database, script)
        while out.hasSuffix("\n") { out.removeLast() }
        return out
    }

    /// `PRAGMA user_version` of a file.
    static func userVersion(_ database: String) throws -> Int? {
        Int(try sql(database, "PRAGMA user_version;"))
    }

    /// The sha256 of a file, as `sha256sum` prints it.
    static func sha256sum(_ path: String) throws -> String {
        let result = try run("/usr/bin/sha256sum", [path])
        try #require(result.status == 0, "sha256sum failed: \(result.stderr)")
        return String(result.stdout.prefix { $0 != " " })
    }

    /// Every line of `text` parsed as JSON (blank lines skipped).
    static func jsonLines(_ text: String) throws -> [JSONValue] {
        try text.split(separator: "\n").map { try JSONParser.parse(String($0)) }
    }

    /// Waits until a daemon started by hand (not through ``DaemonProcess``) answers a ping on
    /// `socket`; false if it exits or `timeout` passes first.
    static func waitUntilServing(_ process: Process, socket: String, timeout: TimeInterval = 60) -> Bool {
        waitUntil(timeout: timeout) {
            guard process.isRunning, let client = try? RawClient(socket: socket) else { return false }
            return (try? client.callOne("ping"))?.error == nil
        }
    }

    /// Sends `signal` and waits up to `timeout` for the daemon to exit; returns its exit status,
    /// or nil (after a SIGKILL) when it did not exit in time.
    static func stop(_ daemon: DaemonProcess, signal: Int32 = SIGTERM, timeout: TimeInterval = 60) -> Int32? {
        stop(daemon.process, signal: signal, timeout: timeout)
    }

    /// ``stop(_:signal:timeout:)`` for a daemon started by hand.
    @discardableResult
    static func stop(_ process: Process, signal: Int32 = SIGTERM, timeout: TimeInterval = 60) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, signal)
        if waitUntil(timeout: timeout, { !process.isRunning }) {
            process.waitUntilExit()
            return process.terminationStatus
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return nil
    }

    /// Creates `account` at the last version of `bundle` under `dataRoot` without a daemon
    /// (`accountd migrate --create`).
    static func createOffline(_ account: String, dataRoot: String, bundle: String) throws {
        let result = try run(Binaries.accountd, ["migrate", "--data-root", dataRoot, "--schema", bundle, "--create", account])
        try #require(result.status == 0, "accountd migrate --create \(account) failed: \(result.stderr)")
    }

    /// Puts a file for `account` into `dataRoot` that is newer than `bundle` and not readable
    /// by it: made offline with a copy of `bundle` plus one more migration, then copied into place.
    static func makeTooNewAccount(_ account: String, dataRoot: String, bundle: String, in dir: borrowing TestDirectory) throws {
        let newer = dir.sub("newer-bundle-\(account)")
        try FileManager.default.createDirectory(atPath: newer + "/migrations", withIntermediateDirectories: true)
        let files = try FileManager.default.contentsOfDirectory(atPath: bundle + "/migrations").filter { $0.hasSuffix(".sql") }.sorted()
        for file in files {
            try FileManager.default.copyItem(atPath: bundle + "/migrations/" + file, toPath: newer + "/migrations/" + file)
        }
        let next = String(format: "%04d_from_the_future.sql", files.count + 1)
        try Files.write("CREATE TABLE from_the_future (id INTEGER PRIMARY KEY);\n", to: newer + "/migrations/" + next)
        let otherRoot = dir.sub("newer-root-\(account)")
        try createOffline(account, dataRoot: otherRoot, bundle: newer)
        try FileManager.default.createDirectory(atPath: dataRoot + "/accounts", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: otherRoot + "/accounts/\(account).sqlite", toPath: dataRoot + "/accounts/\(account).sqlite")
    }

    /// Three steps shaped like the sample bundle's (a user table, then columns and a table
    /// added), for tests that need the same history at several versions.
    static let sampleSteps = [
        "CREATE TABLE user_info (\n  user_id INTEGER PRIMARY KEY,\n  user_name TEXT\n);\n",
        "ALTER TABLE user_info ADD COLUMN age INTEGER;\n",
        "ALTER TABLE user_info ADD COLUMN sex TEXT;\n\nCREATE TABLE app_data (\n  key TEXT PRIMARY KEY NOT NULL,\n  value TEXT\n);\n",
    ]

    /// A SQL statement that inserts `count` rows into `table(id, name, n)` from a recursive CTE.
    static func insertRows(_ table: String, count: Int, from first: Int = 1) -> String {
        """
        WITH RECURSIVE c(i) AS (SELECT \(first) UNION ALL SELECT i + 1 FROM c WHERE i < \(first + count - 1))
        INSERT INTO \(table)(id, name, n) SELECT i, printf('row-%08d-%s', i, hex(randomblob(8))), i * 7 FROM c;
        """
    }

    /// A value shared between threads, guarded by a lock.
    ///
    /// `@unchecked Sendable` is sound: `value` is private and only read or written inside
    /// `withLock`, while `lock` is held.
    final class Locked<Value>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Value

        init(_ value: Value) { self.value = value }

        func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
            lock.lock()
            defer { lock.unlock() }
            return try body(&value)
        }

        var current: Value { withLock { $0 } }
    }
}

extension RawClient {
    /// Reads until the daemon closes the connection; true if it did (end of stream or a reset),
    /// false if more replies came. Collects any lines that arrived.
    func readUntilClosed(timeout seconds: Int = 10) -> (closed: Bool, lines: [String]) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var lines: [String] = []
        while true {
            do {
                guard let line = try readLine() else { return (true, lines) }
                lines.append(line)
                if lines.count > 1000 { return (false, lines) }
            } catch {
                // A receive timeout means the connection is still open; anything else (ECONNRESET:
                // the daemon closed with our bytes still unread) means it was closed.
                return ("\(error)".contains("temporarily unavailable") ? false : true, lines)
            }
        }
    }
}
