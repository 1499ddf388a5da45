import Foundation

/// Who is on the other end of a connection, as the kernel recorded it when the peer
/// connected: `SO_PEERCRED` (pid, uid, gid) and `SO_PEERGROUPS` (supplementary groups).
///
/// Read once, when the connection is accepted (``PeerCredentials/read(from:)``), and never
/// again: nothing about a peer is looked up later, so a process that exits and leaves its
/// pid to another (in an admin group, say) changes nothing about the connection it made.
/// The pid is kept for log lines only; no decision rests on it.
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The peer's pid when it connected (0 when it lives in a pid namespace we cannot see).
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// The peer's supplementary groups when it connected.
    public var groups: [UInt32]

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    public var description: String { "uid \(uid) gid \(gid) pid \(pid)" }
}

/// The memory layout of Linux's `struct ucred`, which Swift's Glibc module does not export.
struct UCred {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
