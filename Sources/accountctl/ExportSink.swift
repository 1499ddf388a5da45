#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where an export's bytes go: stdout, or a file that appears only when it is complete.
///
/// A file is written to a temporary name beside it (`.NAME.accountctl-PID.tmp`), synced,
/// and renamed over `NAME` by ``commit()``. Anything that stops the export first, an
/// error, a dropped connection or Ctrl-C, removes the temporary file, so a failed export
/// never leaves a partial file behind.
final class ExportSink {
    /// The file's final path, or nil for stdout.
    let path: String?
    /// How many bytes have been handed to ``append(_:)``.
    private(set) var byteCount: Int64 = 0
    private let descriptor: Int32
    private let temporaryPath: String?
    private var buffer: [UInt8] = []
    private var isOpen = true
    private static let flushThreshold = 1 << 20

    /// Opens stdout (`path` nil or `-`) or a temporary file beside `path`.
    ///
    /// - Throws: ``ClientError`` when the temporary file cannot be created.
    init(path: String?) throws {
        buffer.reserveCapacity(Self.flushThreshold + 64 * 1024)
        guard let path, path != "-" else {
            self.path = nil
            self.temporaryPath = nil
            self.descriptor = 1
            return
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(directory).\(name).accountctl-\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard fd >= 0 else {
            throw ClientError.failed(
                "cannot write the export beside \(path) (as \(temporary)): \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.temporaryPath = temporary
        self.descriptor = fd
        ExportSink.removeOnSignal(temporary)
    }

    deinit { discard() }

    /// What the export is written to, for messages.
    var destination: String { path ?? "stdout" }

    /// Appends bytes, writing them out in large pieces.
    ///
    /// - Throws: ``ClientError`` when the file cannot be written (a full disk, say).
    func append(_ bytes: some Collection<UInt8>) throws {
        buffer.append(contentsOf: bytes)
        byteCount += Int64(bytes.count)
        if buffer.count >= Self.flushThreshold { try flush() }
    }

    /// Appends a string's UTF-8 bytes.
    func append(_ text: String) throws {
        try append(text.utf8)
    }

    /// Writes what is buffered, syncs the file and renames it to its final name.
    ///
    /// - Throws: ``ClientError``; the temporary file is removed then.
    func commit() throws {
        try flush()
        guard let path, let temporaryPath else { return }
        if fsync(descriptor) != 0 { try fail("syncing") }
        close(descriptor)
        isOpen = false
        if rename(temporaryPath, path) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(temporaryPath)
            throw ClientError.failed("cannot rename the export to \(path): \(reason)")
        }
        ExportSink.removeOnSignal(nil)
    }

    /// Closes and removes the temporary file; the final path is left untouched.
    func discard() {
        guard isOpen, let temporaryPath else { return }
        close(descriptor)
        unlink(temporaryPath)
        isOpen = false
        ExportSink.removeOnSignal(nil)
    }

    private func flush() throws {
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                try fail("writing")
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }

    private func fail(_ doing: String) throws -> Never {
        let reason = String(cString: strerror(errno))
        discard()
        throw ClientError.failed("\(doing) \(destination) failed: \(reason)")
    }

    /// Makes SIGINT, SIGTERM and SIGHUP remove `path` before the process dies, or
    /// restores their default action when `path` is nil.
    private static func removeOnSignal(_ path: String?) {
        if let old = pendingTemporaryPath {
            pendingTemporaryPath = nil
            free(old)
        }
        guard let path else {
            for signalNumber in [SIGINT, SIGTERM, SIGHUP] { signal(signalNumber, SIG_DFL) }
            return
        }
        pendingTemporaryPath = strdup(path)
        for signalNumber in [SIGINT, SIGTERM, SIGHUP] {
            signal(signalNumber) { received in
                // Only async-signal-safe calls here: unlink and _exit.
                if let path = pendingTemporaryPath { unlink(path) }
                _exit(128 + received)
            }
        }
    }
}

/// The temporary export file for the signal handler to remove.
///
/// Only the main thread writes it, and it is always set before the handler is installed
/// and set to nil before the old copy is freed, so the handler sees either nil or a live
/// C string. A signal that lands after the rename unlinks a name that no longer exists,
/// which is harmless.
nonisolated(unsafe) private var pendingTemporaryPath: UnsafeMutablePointer<CChar>?
