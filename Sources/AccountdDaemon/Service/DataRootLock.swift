import Foundation

/// An exclusive lock on the data root, so that two daemons never share one.
///
/// Held with `flock` on `<data-root>/accountd.lock` for the life of the process; the
/// kernel drops it if the process dies.
public final class DataRootLock {
    private let fd: Int32

    /// Takes the lock, or throws naming the data root when another process holds it.
    public init(root: String) throws {
        let path = root + "/accountd.lock"
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw SocketError(message: "cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw SocketError(message: "another accountd is using the data root \(root) (it holds \(path)); stop it first")
        }
        ftruncate(fd, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        self.fd = fd
    }

    deinit { close(fd) }
}
