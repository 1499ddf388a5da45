import Foundation
import NIOCore

/// Reads a connection's ``PeerCredentials`` from the kernel, once, when it is accepted
/// (with the uid's user name from the password database, for `$user` grants).
///
/// `SO_PEERCRED` gives the pid, uid and gid, `SO_PEERGROUPS` the supplementary groups, all
/// as the kernel recorded them at `connect()`. Nothing is read from `/proc`: a pid can be
/// reused by another process as soon as the peer exits, while the connection lives on.
enum PeerCredentialsReader {
    /// `SO_PEERGROUPS` (Linux 4.13 and later); Swift's Glibc module does not export it.
    static let peerGroupsOption: CInt = 59

    /// What `SO_PEERGROUPS` is asked with first: room for 64 groups, enough for nearly every user.
    typealias FewGroups = InlineArray<64, UInt32>
    /// The retry when the first did not fit (`ERANGE`): room for `NGROUPS_MAX` (65536) groups.
    typealias AllGroups = InlineArray<65536, UInt32>
    /// An empty buffer: `SO_PEERGROUPS` succeeds with it only when the peer has no groups.
    struct NoRoom: Sendable {}

    /// The peer of the connection behind `provider` (an accepted channel).
    ///
    /// - Returns: a future that fails when the kernel cannot say who the peer is; the
    ///   connection is then dropped.
    static func read(from provider: any SocketOptionProvider) -> EventLoopFuture<PeerCredentials> {
        provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: SO_PEERCRED)).flatMap { (credentials: UCred) in
            groups(from: provider).map { groups in
                // The user name once, here, for grants on `$user`: a name service is asked once a connection.
                PeerCredentials(
                    pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, groups: groups,
                    userName: PeerCredentials.userName(of: credentials.uid))
            }
        }
    }

    /// The peer's supplementary groups (`SO_PEERGROUPS`), asked with room for 64 and again
    /// with room for all when they do not fit.
    ///
    /// NIO's `unsafeGetSocketOption` fills its buffer with zeroes before the call and does not
    /// return the length the kernel wrote, so the count is read from the buffer: Linux keeps
    /// a credential's groups sorted ascending (`in_group_p` searches them by bisection), so
    /// group 0 can only come first, and the first 0 after a group above 0 ends the list. A
    /// buffer of zeroes alone is group 0, or no groups at all, which asking with no room
    /// tells. Whatever the order, every group returned is one the kernel wrote: a list out of
    /// order (a user namespace's odd map) can at worst lose groups, never add one.
    ///
    /// A kernel without `SO_PEERGROUPS` gives no groups: admin rights by supplementary group
    /// are then not granted (uid and primary group still count).
    static func groups(from provider: any SocketOptionProvider) -> EventLoopFuture<[UInt32]> {
        let option = NIOBSDSocket.Option(rawValue: peerGroupsOption)
        let few: EventLoopFuture<[UInt32]> = provider.unsafeGetSocketOption(level: .socket, name: option).map { (buffer: FewGroups) in
            entries(of: buffer)
        }
        return few.flatMapError { error in
            guard (error as? IOError)?.errnoCode == ERANGE else { return provider.eventLoop.makeFailedFuture(error) }
            return provider.unsafeGetSocketOption(level: .socket, name: option).map { (buffer: AllGroups) in entries(of: buffer) }
        }
        .flatMap { entries in
            // A lone 0 is group 0, or the filler of an empty list: asking with no room tells.
            guard entries == [0] else { return provider.eventLoop.makeSucceededFuture(entries) }
            return provider.unsafeGetSocketOption(level: .socket, name: option)
                .map { (_: NoRoom) in [] }
                .flatMapErrorThrowing { error in
                    guard (error as? IOError)?.errnoCode == ERANGE else { throw error }
                    return entries
                }
        }
        .flatMapErrorThrowing { error in
            guard (error as? IOError)?.errnoCode == ENOPROTOOPT else { throw error }
            return []
        }
    }

    /// The groups in a zero-filled buffer the kernel wrote a sorted list into: the leading
    /// zeroes (group 0, perhaps more than once; or filler when the list is empty) as one 0,
    /// then every group up to the next 0, where the filler begins.
    static func entries<let count: Int>(of buffer: InlineArray<count, UInt32>) -> [UInt32] {
        var entries = [UInt32]()
        var index = 0
        if count > 0 && buffer[0] == 0 {
            entries.append(0)
            while index < count && buffer[index] == 0 { index += 1 }
        }
        while index < count && buffer[index] != 0 {
            entries.append(buffer[index])
            index += 1
        }
        return entries
    }
}
