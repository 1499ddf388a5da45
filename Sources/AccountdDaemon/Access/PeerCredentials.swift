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
    /// The uid's user name (`getpwuid_r`) when it connected; nil for a uid with no name.
    /// A grant for `$user` covers the account of this name.
    public var userName: String?

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = [], userName: String? = nil) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.userName = userName
    }

    /// The user name of `uid` in the password database (`getpwuid_r`), nil when it has none.
    public static func userName(of uid: UInt32) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        while true {
            let status = getpwuid_r(uid, &entry, &buffer, buffer.count, &found)
            if status == ERANGE && buffer.count < 1 << 20 {
                buffer = [CChar](repeating: 0, count: buffer.count * 4)
                continue
            }
            guard status == 0, let found, let name = found.pointee.pw_name else { return nil }
            return String(cString: name)
        }
    }

    /// `uid` as the user database has it: its primary group and every group it is a member of
    /// (`getpwuid_r`, `getgrouplist`): the rights a process of that user started with its
    /// groups (a login, a user unit) has. Nil for a uid with no entry.
    public static func ofUser(_ uid: UInt32) -> PeerCredentials? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, let found, let name = found.pointee.pw_name else { return nil }
        let gid = found.pointee.pw_gid
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        while getgrouplist(name, gid, &groups, &count) == -1, count <= 1 << 16 {
            groups = [gid_t](repeating: 0, count: Int(count) * 2)
            count = Int32(groups.count)
        }
        return PeerCredentials(pid: 0, uid: uid, gid: gid, groups: Array(groups.prefix(Int(max(count, 0)))), userName: String(cString: name))
    }

    public var description: String { "uid \(uid) gid \(gid) pid \(pid)" }
}

/// The memory layout of Linux's `struct ucred`, which Swift's Glibc module does not export.
struct UCred {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
