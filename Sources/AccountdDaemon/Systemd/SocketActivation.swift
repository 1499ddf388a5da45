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
