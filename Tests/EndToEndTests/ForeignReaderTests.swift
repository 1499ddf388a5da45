import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Another process opening an account file while the daemon has it open (an operator's
/// `sqlite3` looking at a row) must not cost the daemon anything it acknowledged.
///
/// The daemon keeps connections open to the active account; SQLite holds a shared POSIX lock
/// on the file for each, which tells another process closing its own connection that it is
/// not the last one, so it leaves the WAL alone. Closing any other descriptor of the file in
/// the daemon's process drops those locks: reading the header with a plain `open`/`close`
/// (as `Status {account}` did) let the next `sqlite3` checkpoint and delete the WAL under the
/// daemon, and every Set acknowledged after that went to a deleted file.
@Suite struct ForeignReaderTests {
    @Test func aSqlite3ReaderAfterAStatusCostsNoAcknowledgedWrite() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne(#"set user theme "dark""#).error == nil)
        // Reads the file's header and closes it again while the preference table is open.
        #expect(try client.callOne("status alice").parameters["state"] == "current")
        let path = daemon.accountPath("alice")
        #expect(try E2E.sqlite3(path, "SELECT count(*) > 0 FROM sqlite_master;").contains("1"))
        #expect(FileManager.default.fileExists(atPath: path + "-wal"), "another process deleted the WAL the daemon writes to")

        #expect(try client.callOne(#"set user theme "light""#).error == nil)
        #expect(try client.callOne(#"set user font "big""#).error == nil)
        _ = daemon.stop(signal: SIGKILL)
        try daemon.restart()

        let after = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try after.callOne("get user theme alice").parameters["value"] == "light")
        #expect(try after.callOne("get user font alice").parameters["value"] == "big")
    }
}
