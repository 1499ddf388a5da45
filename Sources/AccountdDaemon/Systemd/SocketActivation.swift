import AccountdProtocol
import CSystemd
import Foundation

/// The listening sockets systemd passes with socket activation, if any.
///
/// `accountd.socket` passes two, told apart by their `FileDescriptorName=`: the line
/// socket (`accountd`, or any name but `varlink`) and the varlink socket (`varlink`).
enum SocketActivation {
    /// The name that marks the varlink socket (`FileDescriptorName=varlink`).
    static let varlinkName = "varlink"

    /// One socket systemd passed.
    struct Passed: Sendable {
        var fd: CInt
        var name: String
    }

    /// The passed sockets, one per framing: the first named `varlink` serves varlink, the
    /// first with any other name the line protocol. Empty when `LISTEN_FDS`/`LISTEN_PID`
    /// are not set for this process.
    ///
    /// `sd_listen_fds_with_names` checks `LISTEN_PID` against our pid and unsets the
    /// variables, so a child process never adopts our sockets.
    static func passedSockets() -> [Framing: Passed] {
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
        var passed: [Framing: Passed] = [:]
        for index in 0..<max(0, Int(count)) {
            let name = names?[index].map { String(cString: $0) } ?? "unknown"
            let framing: Framing = name == varlinkName ? .varlink : .line
            if passed[framing] == nil {
                passed[framing] = Passed(fd: SD_LISTEN_FDS_START + CInt(index), name: name)
            }
        }
        return passed
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
