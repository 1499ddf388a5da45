import CSystemd
import Foundation

/// The listening socket systemd passes with socket activation, if any.
enum SocketActivation {
    /// The first passed socket and its name, when `LISTEN_FDS`/`LISTEN_PID` are set for this process.
    ///
    /// `sd_listen_fds_with_names` checks `LISTEN_PID` against our pid and unsets the
    /// variables, so a child process never adopts our sockets.
    static func passedSocket() -> (fd: CInt, name: String)? {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        defer {
            if let names {
                var index = 0
                while let name = names[index] {
                    free(name)
                    index += 1
                }
                free(names)
            }
        }
        guard count >= 1 else { return nil }
        let name = names?[0].map { String(cString: $0) } ?? "unknown"
        return (SD_LISTEN_FDS_START, name)
    }
}

extension SocketActivation {
    /// The filesystem path a listening Unix socket is bound to, or nil (abstract or not Unix).
    static func path(of fd: CInt) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }
}
