import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Every failure leaves a log line naming the account, the operation and the error
/// (issue 29, finding 27); Switch and Migrate are held in `HonestStatusTests`.
@Suite struct FailureLogTests {
    /// A pull that Litestream cannot do answers an error, and the log says which account,
    /// which operation and which error, with the replica's password masked.
    @Test(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
    func aFailedPullIsLogged() throws {
        let dir = TestDirectory()
        // A replica "folder" that is a file: Litestream's restore fails on it.
        let blocker = dir.sub("replica-is-a-file")
        try Files.write("not a folder", to: blocker)
        let daemon = try E2E.replicatingDaemon(
            directory: dir.sub("host"), bundle: Repository.sampleBundle, replica: "file://" + blocker, runDirectory: dir.sub("run"))
        let reply = try daemon.client().callOne(#"{"method":"io.accountd.Pull","parameters":{"account":"ghost"}}"#)
        let error = try #require(reply.error, "\(reply.parameters)")
        let logged = waitUntil(timeout: 5) {
            daemon.log.split(separator: "\n").contains { line in
                line.contains("operation=Pull") && line.contains("account=ghost") && line.contains(error.rawValue)
            }
        }
        #expect(logged, "no log line for the failed pull (\(error.rawValue)): \(daemon.log.suffix(3000))")
    }
}
