import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The daemon reads an import's file for its caller only as far as the caller could reach it
/// itself: an admin who is not root gets nothing from behind a folder it cannot enter, and no
/// refusal quotes a file's text to it (hostile33d #5).
@Suite struct ImportReachTests {
    static let secret = "SUPERSECRET2 is the password\n"

    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv"))
    func anAdminReachesNoFileBehindAFolderItCannotEnterAndIsQuotedNoText() throws {
        let dir = TestDirectory()
        #expect(chmod(dir.path, 0o755) == 0)
        let (_, files, _) = try ImportTests.exports(dir)
        // A root folder closed to others, holding world-readable files; and an open folder.
        let closed = dir.sub("closed")
        try FileManager.default.createDirectory(atPath: closed, withIntermediateDirectories: true)
        #expect(chmod(closed, 0o700) == 0)
        let hidden = closed + "/open.sqlite"
        try FileManager.default.copyItem(atPath: try #require(files["sqlite"]), toPath: hidden)
        let hiddenText = closed + "/pw.txt"
        try Files.write(Self.secret, to: hiddenText)
        let openText = dir.sub("pw.txt")
        try Files.write(Self.secret, to: openText)
        for file in [hidden, hiddenText, openText] { #expect(chmod(file, 0o644) == 0) }

        let bundle = try BundleFixture.write(at: dir.sub("bundle-b"), steps: ExportRoundTripTests.steps)
        try FileManager.default.createDirectory(atPath: dir.sub("host-b"), withIntermediateDirectories: true)
        #expect(chmod(dir.sub("host-b"), 0o755) == 0)
        let hostB = try E2E.daemon(
            directory: dir.sub("host-b"), bundle: bundle, environment: ["ACCOUNTD_SOCKET_MODE": "0666", "ACCOUNTD_ADMIN_USERS": "4242"])
        let asAdmin = { (arguments: [String]) in try AccessTests.accountctl(as: 4242, gid: 4242, socket: hostB.socket, arguments) }

        // Behind the closed folder: refused alike whether the file is there or not, naming the folder.
        for file in [hidden, hiddenText, closed + "/missing.sqlite"] {
            let refused = try asAdmin(["import", "alice", file, "--rebind"])
            #expect(refused.status != 0 && refused.stderr.contains("is in folder \(closed), which the caller (uid 4242) cannot enter"),
                "\(file): \(refused.stdout) \(refused.stderr)")
            #expect(!refused.stderr.contains("SUPERSECRET2"), "\(file): \(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: hostB.accountPath("alice")), "\(file) was imported")
        }
        // A file the admin can read: the refusal names the statement and SQLite's kind of error, not the text.
        let unquoted = try asAdmin(["import", "alice", openText])
        #expect(unquoted.status != 0 && unquoted.stderr.contains("statement 1 fails (SQLite: "), "\(unquoted.stdout) \(unquoted.stderr)")
        #expect(!unquoted.stderr.contains("SUPERSECRET2"), "\(unquoted.stderr)")
        // Root reaches and is told everything.
        let quoted = try E2E.accountctl(["import", "alice", openText], socket: hostB.socket)
        #expect(quoted.status != 0 && quoted.stderr.contains("near \"SUPERSECRET2\""), "\(quoted.stdout) \(quoted.stderr)")
        let rooted = try E2E.accountctl(["import", "alice", hidden], socket: hostB.socket)
        #expect(rooted.status == 0, "\(rooted.stdout) \(rooted.stderr)")
    }
}
