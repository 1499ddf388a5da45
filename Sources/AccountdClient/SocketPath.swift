#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the daemon's socket is.
public enum SocketPath {
    /// The socket when neither a path nor `ACCOUNTD_SOCKET` is given.
    public static let defaultPath = "/run/accountd/accountd.sock"

    /// `sun_path` holds this many bytes, the terminating NUL included, so a path must be shorter.
    public static let maximumLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    /// `explicit` when given, else `$ACCOUNTD_SOCKET` when set and not empty, else ``defaultPath``.
    public static func resolve(_ explicit: String? = nil) -> String {
        if let explicit { return explicit }
        if let value = getenv("ACCOUNTD_SOCKET"), value.pointee != 0 { return String(cString: value) }
        return defaultPath
    }
}
