import AccountdProtocol
import CSystemd
import Foundation

/// The listening sockets systemd passes with socket activation, if any, and what the daemon
/// serves because of them.
///
/// `accountd.socket` passes two, told apart by their `FileDescriptorName=`: the line
/// socket (`accountd`, or any name but `varlink`) and the varlink socket (`varlink`). A
/// single socket without a name (`systemd-socket-activate -l PATH`, or a unit from before
/// varlink) is the line socket. When systemd passes sockets, the daemon serves exactly
/// those and binds none of its own (SPEC section 9): a socket it was not given is not served.
enum SocketActivation {
    /// The name that marks the varlink socket (`FileDescriptorName=varlink`).
    static let varlinkName = "varlink"

    /// One socket systemd passed.
    struct Passed: Sendable {
        var fd: CInt
        var name: String

        /// What is spoken on it: varlink when it is named `varlink`, else the line protocol.
        var framing: Framing { name == SocketActivation.varlinkName ? .varlink : .line }

        /// How the log names it: `fd 3 'accountd.socket' at /run/accountd/accountd.sock`.
        var description: String {
            "fd \(fd) '\(name)'\(SocketActivation.path(of: fd).map { " at \($0)" } ?? "")"
        }
    }

    /// The sockets passed to this process, in order. Empty when `LISTEN_FDS`/`LISTEN_PID`
    /// are not set for this process. A socket without a name is named `unknown`.
    ///
    /// `sd_listen_fds_with_names` checks `LISTEN_PID` against our pid and unsets the
    /// variables, so a child process never adopts our sockets.
    static func passedSockets() -> [Passed] {
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
        return (0..<max(0, Int(count))).map { index in
            Passed(fd: SD_LISTEN_FDS_START + CInt(index), name: names?[index].map { String(cString: $0) } ?? "unknown")
        }
    }

    /// What the daemon serves, and a sentence for the log when socket activation chose it.
    struct Plan {
        /// One listener per socket served.
        var listeners: [(framing: Framing, listener: SocketServer.Listener)]
        /// Which sockets were passed and which are served; nil without socket activation.
        var activation: String?
    }

    /// With sockets passed: the first of each framing, and nothing bound; the others are left
    /// alone (and named in the log). Without: both sockets bound at their paths with `mode`.
    static func plan(passed: [Passed], linePath: String, varlinkPath: String, mode: UInt32) -> Plan {
        guard !passed.isEmpty else {
            return Plan(listeners: [(.line, .bind(path: linePath, mode: mode)), (.varlink, .bind(path: varlinkPath, mode: mode))], activation: nil)
        }
        var listeners: [(framing: Framing, listener: SocketServer.Listener)] = []
        var unused: [Passed] = []
        for socket in passed {
            if listeners.contains(where: { $0.framing == socket.framing }) {
                unused.append(socket)
            } else {
                listeners.append((socket.framing, .adopt(fd: socket.fd, description: socket.description)))
            }
        }
        let served = listeners.map { $0.framing == .varlink ? "varlink" : "the line protocol" }.joined(separator: " and ")
        var sentence = "socket activation: systemd passed \(passed.count) socket(s) (\(passed.map(\.description).joined(separator: ", "))); serving \(served) on them and binding no socket of its own"
        for framing in [Framing.line, .varlink] where !listeners.contains(where: { $0.framing == framing }) {
            sentence += framing == .varlink
                ? "; no socket named 'varlink' was passed, so varlink is not served (add accountd-varlink.socket to serve it)"
                : "; no line socket was passed, so the line protocol is not served"
        }
        if !unused.isEmpty {
            sentence += "; left unused: \(unused.map(\.description).joined(separator: ", ")) (one socket per protocol is served)"
        }
        return Plan(listeners: listeners, activation: sentence)
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
