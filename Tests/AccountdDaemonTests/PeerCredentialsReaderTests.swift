import Foundation
import Testing

@testable import AccountdDaemon

/// How the supplementary groups are read out of the zero-filled buffer `SO_PEERGROUPS`
/// wrote a sorted list into, and that admin rights rest on those groups alone.
@Suite struct PeerCredentialsReaderTests {
    @Test(arguments: [
        ([0, 0, 0, 0], [0]),  // no groups, or group 0: asking with no room tells (see groups(from:))
        ([5, 7, 0, 0], [5, 7]),
        ([0, 5, 0, 0], [0, 5]),
        ([0, 0, 5, 9], [0, 5, 9]),
        ([4, 4343, 60000, 70000], [4, 4343, 60000, 70000]),
    ] as [([UInt32], [UInt32])])
    func groupsAreReadUpToTheFiller(buffer: [UInt32], groups: [UInt32]) {
        let inline: InlineArray<4, UInt32> = [buffer[0], buffer[1], buffer[2], buffer[3]]
        #expect(PeerCredentialsReader.entries(of: inline) == groups)
    }

    /// The groups the peer had when it connected decide; nothing is looked up by pid (this
    /// process's own pid here, whatever its groups are).
    @Test func adminRightsRestOnTheGroupsCapturedAtConnect() {
        let policy = AccessPolicy(adminUsers: [], adminGroups: [4343], ownUID: 1)
        #expect(policy.isAdmin(PeerCredentials(pid: getpid(), uid: 5001, gid: 5001, groups: [4343])))
        #expect(!policy.isAdmin(PeerCredentials(pid: getpid(), uid: 5001, gid: 5001, groups: [])))
        #expect(policy.isAdmin(PeerCredentials(pid: 0, uid: 5001, gid: 4343)))
    }
}
