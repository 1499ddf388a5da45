import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// One datagram received on a test's own Unix socket, with the sender's credentials
/// (`SCM_CREDENTIALS`, which the kernel attaches because the socket has `SO_PASSCRED`).
struct Datagram: Sendable {
    var pid: Int32?
    var uid: UInt32?
    var gid: UInt32?
    var bytes: [UInt8]
    var received = Date()

    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// An `sd_notify` message as its `NAME=value` lines (`READY=1`, `STATUS=...`).
    var assignments: [String: String] {
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            result[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return result
    }
}

/// A `SOCK_DGRAM` Unix socket bound at `path` with `SO_PASSCRED`, drained by a thread of its own.
///
/// Draining matters: a datagram socket's queue holds `net.unix.max_dgram_qlen` (often 10)
/// messages, and `sd_notify` and `sd_journal_sendv` block the daemon when it is full.
/// The thread holds the receiver: call ``close()`` when done (a `defer` right after creating it).
final class DatagramReceiver: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [Datagram] = []
    private var stopRequested = false
    private var closed = false
    private let finished = DispatchSemaphore(value: 0)

    init(path: String) throws {
        self.path = path
        // Bound before `self` is complete, so a failure never runs deinit (which would unlink
        // `path`, perhaps someone else's socket).
        (fd, identity) = try Self.bindSocket(at: path)
        let thread = Thread { [self] in self.receiveLoop() }
        thread.name = "datagram receiver \(path)"
        thread.start()
    }

    /// The device and inode of the socket file we bound, so that we only ever remove our own.
    private let identity: (dev: UInt64, ino: UInt64)

    /// A `SOCK_DGRAM` socket bound at `path`, moved to a high descriptor number.
    ///
    /// The high number keeps it clear of a double `close()` elsewhere in the test process:
    /// `RawClient.init` closes its descriptor when `connect` fails and its `deinit` closes the
    /// same number again, which may by then belong to another test's socket. Only the lowest
    /// free numbers get reused that fast.
    private static func bindSocket(at path: String) throws -> (Int32, (dev: UInt64, ino: UInt64)) {
        let low = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard low >= 0 else { throw SystemdTestError("socket(): \(String(cString: strerror(errno)))") }
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let floor = Int32(clamping: max(3, min(Int(clamping: limit.rlim_cur) / 2, 4096)))
        let high = fcntl(low, F_DUPFD_CLOEXEC, floor)
        let fd = high >= 0 ? high : low
        if high >= 0 { Glibc.close(low) }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, socklen_t(MemoryLayout<Int32>.size))
        var size: Int32 = 8 << 20
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(fd)
            throw SystemdTestError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw SystemdTestError("bind(\(path)): \(message)")
        }
        var file = stat()
        lstat(path, &file)
        return (fd, (UInt64(file.st_dev), UInt64(file.st_ino)))
    }

    deinit { close() }

    /// Stops the thread, closes the socket and removes its file.
    func close() {
        lock.lock()
        if closed {
            lock.unlock()
            return
        }
        closed = true
        stopRequested = true
        lock.unlock()
        finished.wait()
        Glibc.close(fd)
        var file = stat()
        if lstat(path, &file) == 0 && UInt64(file.st_dev) == identity.dev && UInt64(file.st_ino) == identity.ino {
            unlink(path)
        }
    }

    /// Everything received so far, in order.
    var datagrams: [Datagram] {
        lock.lock()
        defer { lock.unlock() }
        return received
    }

    /// Waits until `condition` holds for what was received, or `timeout` passes; returns whether it held.
    @discardableResult
    func wait(timeout: TimeInterval = 10, until condition: ([Datagram]) -> Bool) -> Bool {
        waitUntil(timeout: timeout) { condition(datagrams) }
    }

    private var shouldStop: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopRequested
    }

    private func receiveLoop() {
        defer { finished.signal() }
        let bufferSize = 4 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        let controlSize = 512
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlSize, alignment: 8)
        defer {
            buffer.deallocate()
            control.deallocate()
        }
        while !shouldStop {
            var vector = iovec(iov_base: buffer, iov_len: bufferSize)
            let count: Int = withUnsafeMutablePointer(to: &vector) { vectorPointer in
                var message = msghdr(
                    msg_name: nil, msg_namelen: 0, msg_iov: vectorPointer, msg_iovlen: 1,
                    msg_control: control, msg_controllen: controlSize, msg_flags: 0)
                let count = recvmsg(fd, &message, Int32(MSG_CMSG_CLOEXEC))
                guard count >= 0 else { return -1 }
                var datagram = Datagram(bytes: Array(UnsafeRawBufferPointer(start: buffer, count: count)))
                Self.parseControl(control, length: message.msg_controllen, into: &datagram)
                lock.lock()
                received.append(datagram)
                lock.unlock()
                return count
            }
            if count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { break }
        }
    }

    /// Walks the control messages by hand (x86_64 and aarch64 Linux): `cmsg_len` is a
    /// `size_t`, then `cmsg_level` and `cmsg_type` (Int32 each), then the data, each header
    /// and message padded to 8 bytes. `SCM_CREDENTIALS` carries `struct ucred {pid, uid, gid}`;
    /// `SCM_RIGHTS` carries the memfd `sd_journal_sendv` uses for entries too large for one datagram.
    static func parseControl(_ control: UnsafeMutableRawPointer, length: Int, into datagram: inout Datagram) {
        let header = MemoryLayout<Int>.size + 2 * MemoryLayout<Int32>.size
        var offset = 0
        while offset + header <= length {
            let messageLength = control.loadUnaligned(fromByteOffset: offset, as: Int.self)
            let level = control.loadUnaligned(fromByteOffset: offset + MemoryLayout<Int>.size, as: Int32.self)
            let type = control.loadUnaligned(fromByteOffset: offset + MemoryLayout<Int>.size + 4, as: Int32.self)
            guard messageLength >= header, offset + messageLength <= length else { break }
            let data = offset + header
            if level == SOL_SOCKET && type == 2 /* SCM_CREDENTIALS */ && messageLength - header >= 12 {
                datagram.pid = control.loadUnaligned(fromByteOffset: data, as: Int32.self)
                datagram.uid = control.loadUnaligned(fromByteOffset: data + 4, as: UInt32.self)
                datagram.gid = control.loadUnaligned(fromByteOffset: data + 8, as: UInt32.self)
            } else if level == SOL_SOCKET && type == 1 /* SCM_RIGHTS */ {
                for index in 0..<((messageLength - header) / 4) {
                    let passed = control.loadUnaligned(fromByteOffset: data + 4 * index, as: Int32.self)
                    if datagram.bytes.isEmpty { datagram.bytes = readAll(passed) }
                    Glibc.close(passed)
                }
            }
            offset += (messageLength + 7) & ~7
        }
    }

    private static func readAll(_ fd: Int32) -> [UInt8] {
        lseek(fd, 0, SEEK_SET)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return bytes
    }
}

struct SystemdTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - The journal's native protocol

/// One journal entry as `sd_journal_sendv` sends it: `NAME=value\n` per field, or, for a value
/// holding a newline, `NAME\n`, the value's length as 8 bytes little-endian, the value, `\n`.
struct JournalEntry: Sendable, CustomStringConvertible {
    var fields: [(name: String, value: String)]
    var pid: Int32?

    subscript(name: String) -> String? { fields.first { $0.name == name }?.value }

    var message: String { self["MESSAGE"] ?? "" }
    var priority: Int? { self["PRIORITY"].flatMap { Int($0) } }

    var description: String { fields.map { "\($0.name)=\($0.value)" }.joined(separator: " | ") }

    /// Parses one datagram; nil when it does not follow the protocol.
    static func parse(_ bytes: [UInt8]) -> [(name: String, value: String)]? {
        var fields: [(name: String, value: String)] = []
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\n") }) else {
                return nil
            }
            let name = String(decoding: bytes[index..<end], as: UTF8.self)
            guard !name.isEmpty else { return nil }
            if bytes[end] == UInt8(ascii: "=") {
                guard let newline = bytes[(end + 1)...].firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                fields.append((name, String(decoding: bytes[(end + 1)..<newline], as: UTF8.self)))
                index = newline + 1
            } else {
                let start = end + 1
                guard start + 8 <= bytes.count else { return nil }
                var length: UInt64 = 0
                for (shift, byte) in bytes[start..<(start + 8)].enumerated() { length |= UInt64(byte) << (8 * UInt64(shift)) }
                let valueStart = start + 8
                guard length <= UInt64(bytes.count - valueStart), valueStart + Int(length) < bytes.count,
                    bytes[valueStart + Int(length)] == UInt8(ascii: "\n")
                else { return nil }
                fields.append((name, String(decoding: bytes[valueStart..<(valueStart + Int(length))], as: UTF8.self)))
                index = valueStart + Int(length) + 1
            }
        }
        return fields
    }
}

/// A stand-in for journald: our own datagram socket at `/run/systemd/journal/socket`.
///
/// Only made where no journal socket exists (no journald, as in a container whose PID 1 is not
/// systemd); a real journald's socket is never touched.
final class FakeJournal {
    static let directory = "/run/systemd/journal"
    static let socketPath = directory + "/socket"

    let receiver: DatagramReceiver
    private var createdDirectories: [String]

    /// nil when a journal socket already exists (a real journald, or another test run's stand-in).
    static func start() throws -> FakeJournal? {
        var info = stat()
        if lstat(socketPath, &info) == 0 { return nil }
        var created: [String] = []
        for directory in ["/run/systemd", Self.directory] where !FileManager.default.fileExists(atPath: directory) {
            guard mkdir(directory, 0o755) == 0 || errno == EEXIST else {
                throw SystemdTestError("mkdir \(directory): \(String(cString: strerror(errno)))")
            }
            created.append(directory)
        }
        let receiver: DatagramReceiver
        do {
            receiver = try DatagramReceiver(path: socketPath)
        } catch {
            for directory in created.reversed() { rmdir(directory) }
            // Another test run bound it between our check and our bind: theirs, leave it.
            if lstat(socketPath, &info) == 0 { return nil }
            throw error
        }
        return FakeJournal(receiver: receiver, createdDirectories: created)
    }

    private init(receiver: DatagramReceiver, createdDirectories: [String]) {
        self.receiver = receiver
        self.createdDirectories = createdDirectories
    }

    /// Entries sent by `pid`; fails the test for a datagram that does not parse.
    func entries(from pid: Int32) -> [JournalEntry] {
        receiver.datagrams.filter { $0.pid == pid }.compactMap { datagram in
            guard let fields = JournalEntry.parse(datagram.bytes) else {
                Issue.record("not the journal's native protocol: \(datagram.bytes.prefix(200))")
                return nil
            }
            return JournalEntry(fields: fields, pid: datagram.pid)
        }
    }

    /// Waits until an entry from `pid` satisfies `condition`; returns it.
    func waitForEntry(from pid: Int32, timeout: TimeInterval = 10, _ condition: (JournalEntry) -> Bool) -> JournalEntry? {
        var found: JournalEntry?
        receiver.wait(timeout: timeout) { _ in
            found = entries(from: pid).first(where: condition)
            return found != nil
        }
        return found
    }

    /// Removes the socket and the folders made for it.
    func stop() {
        receiver.close()
        for directory in createdDirectories.reversed() { rmdir(directory) }
        createdDirectories = []
    }

    deinit { stop() }
}

// MARK: - Processes

enum SystemdSupport {
    /// `JOURNAL_STREAM` for a file: its device and inode, as systemd writes them.
    static func journalStream(of path: String) throws -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { throw SystemdTestError("stat \(path): \(String(cString: strerror(errno)))") }
        return "\(info.st_dev):\(info.st_ino)"
    }

    /// The device and inode of a file, or nil when it does not exist.
    static func identity(of path: String) -> (dev: UInt64, ino: UInt64, isSocket: Bool)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino), info.st_mode & S_IFMT == S_IFSOCK)
    }

    /// Runs `program` as `uid`:`uid` with no supplementary groups (`setpriv`).
    static func run(asUID uid: Int, _ program: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runProgram("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", program] + arguments)
    }

    /// Starts `path` with `arguments` and `environment` exactly (nothing inherited), output to `log`.
    static func start(_ path: String, _ arguments: [String], environment: [String: String], log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = environment
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let handle = try FileHandle(forWritingAtPath: log).orThrow("cannot open \(log)")
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Sends `signal` to `process` and waits up to `timeout`; the exit status and the time it
    /// took, or nil status (after SIGKILL) when it did not exit in time.
    static func stop(_ process: Process, signal: Int32 = SIGTERM, timeout: TimeInterval) -> (status: Int32?, seconds: TimeInterval) {
        let start = Date()
        let status = E2E.stop(process, signal: signal, timeout: timeout)
        return (status, Date().timeIntervalSince(start))
    }

    /// Connects a stream socket to `path` and closes it again: 0, or the errno of `connect`.
    /// (RawClient's failed connect closes its descriptor twice; this does not.)
    static func connectError(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { Glibc.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8.prefix($0.count - 1))) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return result == 0 ? 0 : errno
    }

    /// The daemon's log, read from the file (for messages).
    static func tail(_ path: String, _ count: Int = 3000) -> String {
        String(((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").suffix(count))
    }
}

extension Optional {
    func orThrow(_ message: String) throws -> Wrapped {
        guard let self else { throw SystemdTestError(message) }
        return self
    }
}
