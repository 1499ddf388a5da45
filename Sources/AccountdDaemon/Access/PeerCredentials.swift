import Foundation

/// Who is on the other end of a connection, as the kernel reports it (SO_PEERCRED).
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public var description: String { "uid \(uid) gid \(gid) pid \(pid)" }

    /// The peer's supplementary groups, read from `/proc/<pid>/status`; empty if unreadable.
    public var supplementaryGroups: [UInt32] {
        guard pid > 0, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return [] }
        for line in status.split(separator: "\n") where line.hasPrefix("Groups:") {
            return line.dropFirst("Groups:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { UInt32($0) }
        }
        return []
    }
}

/// The memory layout of Linux's `struct ucred`, which Swift's Glibc module does not export.
struct UCred {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
