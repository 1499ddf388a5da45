import AccountdTestSupport
import Foundation
import Testing

/// `systemd/accountd.service.d/replica-network.conf`: the drop-in that lets the daemon's unit
/// reach a remote replica (Pull, Restore --at, the creation check run `litestream restore`
/// and `ltx` inside it). Installed beside the units, they still verify, and it opens the
/// network and nothing else.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), "needs /usr/bin/systemd-analyze"))
struct ReplicaNetworkDropInTests {
    @Test func theDropInOpensTheNetworkAndTheUnitsStillVerify() throws {
        let dir = TestDirectory()
        let units = try SystemdTests.installUnits(into: dir.sub("units"))
        func security() throws -> String {
            let run = try runProgram("/usr/bin/systemd-analyze", ["security", "--offline=true", "--no-pager", units.service])
            return run.stdout + run.stderr
        }
        let closed = try security()
        #expect(closed.contains("Service has no access to the host's network"), "\(closed)")
        let service = (try String(contentsOfFile: units.service, encoding: .utf8))
        #expect(service.contains("EnvironmentFile=-/etc/accountd/litestream.env"), "the daemon reads Litestream's credentials too")

        let dropIns = dir.sub("units/accountd.service.d")
        try FileManager.default.createDirectory(atPath: dropIns, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Repository.root + "/systemd/accountd.service.d/replica-network.conf", toPath: dropIns + "/replica-network.conf")
        let verified = try runProgram("/usr/bin/systemd-analyze", ["verify", "--man=no", units.service, units.socket])
        #expect(verified.status == 0 && verified.stderr == "", "\(verified.stderr)")
        let open = try security()
        #expect(open.contains("Service has access to the host's network"), "\(open)")
        // Everything else stays as hardened: the exposure rises by the network alone.
        let line = try #require(open.split(separator: "\n").first { $0.contains("Overall exposure level for accountd.service: ") })
        let figure = line[line.range(of: "accountd.service: ")!.upperBound...].prefix { $0.isNumber || $0 == "." }
        #expect((Double(figure) ?? 99) <= 2.0, "\(line)")
    }
}
