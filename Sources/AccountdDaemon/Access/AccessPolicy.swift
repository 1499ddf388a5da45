import AccountdProtocol
import Foundation

/// Decides which peers may call the admin methods.
///
/// Admins are root, the daemon's own uid, and the uids and groups named in the
/// config. Any peer that can connect (the socket is 0660) may call the others.
public struct AccessPolicy: Sendable {
    public var adminUsers: Set<UInt32>
    public var adminGroups: Set<UInt32>
    public var ownUID: UInt32

    public init(adminUsers: [UInt32], adminGroups: [UInt32], ownUID: UInt32 = getuid()) {
        self.adminUsers = Set(adminUsers)
        self.adminGroups = Set(adminGroups)
        self.ownUID = ownUID
    }

    /// Whether `peer` is an admin.
    public func isAdmin(_ peer: PeerCredentials) -> Bool {
        if peer.uid == 0 || peer.uid == ownUID || adminUsers.contains(peer.uid) { return true }
        if adminGroups.isEmpty { return false }
        if adminGroups.contains(peer.gid) { return true }
        return !adminGroups.isDisjoint(with: peer.groups)
    }

    /// Throws `PermissionDenied` when `peer` may not call `method`.
    public func check(_ method: Method, peer: PeerCredentials) throws(ProtocolError) {
        guard method.requiresAdmin, !isAdmin(peer) else { return }
        throw ProtocolError(
            .permissionDenied,
            "\(method.rawValue) is for admins only (root, the daemon's user, or the users and groups in admin.users and admin.groups); you are uid \(peer.uid)",
            facts: [("method", .string(method.qualifiedName))])
    }
}
