import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `accountctl restore --at` refuses a date that does not exist as a usage error (exit 2)
/// saying why, before it asks the daemon anything; it used to restore at another time
/// (hostile33c #8). The daemon's own refusal is ReplicaTimeTests's.
@Suite struct ImpossibleTimeTests {
    @Test(arguments: [("2026-11-31T10:00:00Z", "month 11 of 2026 has 30 days"), ("2026-02-30T00:00:00Z", "month 2 of 2026 has 28 days")])
    func accountctlRefusesADateThatDoesNotExist(text: String, why: String) throws {
        let dir = TestDirectory()
        let refused = try E2E.accountctl(["restore", "alice", "--at", text], socket: dir.sub("no-daemon.sock"))
        #expect(refused.status == 2, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr.contains(why) && refused.stderr.contains("nothing was restored"), "\(refused.stderr)")
    }
}
