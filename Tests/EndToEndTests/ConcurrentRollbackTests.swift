import AccountdProtocol
import AccountdTestSupport
import Foundation
import Synchronization
import Testing

/// hostile34d F1: two `migrate --all --rollback-to N` at once restored the same accounts
/// twice: the second judged an account's version before it held the account, and restored
/// it again after the first had put it back, setting the live file aside once more. Each
/// account is now judged again while it is held: restored once, `current` for the other run.
@Suite struct ConcurrentRollbackTests {
    /// `names` made at version 1 of the item bundle with `rows` rows each, released to version 2
    /// (migrated), and a daemon serving version 1 again (the release put back), ready to roll
    /// back `concurrency` accounts at a time; the folder of the version 1 bundle.
    static func released(
        _ names: [String], rows: Int, in dir: borrowing TestDirectory, concurrency: Int
    ) throws -> (daemon: DaemonProcess, v1: String) {
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: [Hostile.itemV1, Hostile.itemV2])
        for name in names { try Hostile.makeItemAccount(name, rows: rows, dataRoot: dir.sub("data"), bundle: v1) }
        let releasing = try E2E.daemon(directory: dir.path, bundle: v2)
        let released = try E2E.accountctl(["migrate", "--all"], socket: releasing.socket)
        #expect(released.status == 0, "\(released.stdout) \(released.stderr)")
        _ = E2E.stop(releasing)
        let daemon = try E2E.daemon(directory: dir.path, bundle: v1, environment: ["ACCOUNTD_ACCOUNTS_MIGRATE_CONCURRENCY": "\(concurrency)"])
        return (daemon, v1)
    }

    @Test func twoRollbacksAtOnceRestoreEachAccountOnce() throws {
        let dir = TestDirectory()
        let names = (0..<12).map { "r\($0)" }
        let (daemon, _) = try Self.released(names, rows: 3000, in: dir, concurrency: 4)
        defer { _ = E2E.stop(daemon) }

        let socket = daemon.socket
        let outputs = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let run = try? E2E.accountctl(["--json", "migrate", "--all", "--rollback-to", "1"], socket: socket)
            outputs.withLock { $0.append(run?.stdout ?? "") }
        }
        var restored = 0
        for output in outputs.withLock({ $0 }) {
            // One line per account, then the summary.
            let summary = try JSONParser.parse(String(output.split(separator: "\n").last ?? ""))
            restored += Int(summary["restored"]?.intValue ?? 0)
        }
        #expect(restored == names.count, "\(outputs.withLock { $0 })")
        for name in names {
            #expect(try E2E.userVersion(daemon.accountPath(name)) == 1, "\(name)")
            let kept = Hostile.listing(daemon.dataRoot + "/snapshots/" + name).filter { $0.contains("before-restore") }
            #expect(kept.count == 1, "\(name): \(kept)")
        }
    }
}
