import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

@testable import AccountdCore

/// `Status {account}` reads what an account's file says about itself once, and again only
/// when the file or its WAL changed (issue 32: it must not reopen or re-read the whole file
/// for each request).
@Suite struct StatusFactsTests {
    /// A store over `dir`'s root with the three-step bundle of ``DecisionTableTests``.
    func store(_ dir: borrowing TestDirectory) throws -> AccountStore {
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: DecisionTableTests.steps)
        return AccountStore(root: try DataRoot(dir.sub("root")), bundle: try SchemaBundle.load(from: bundle))
    }

    /// Writes `version` into the file's header (`user_version`, bytes 60 to 63), then puts back
    /// its modification time when `keepStamp`, so that only its bytes tell the change.
    func writeUserVersion(_ version: UInt32, at path: String, keepStamp: Bool) throws {
        var info = stat()
        #expect(lstat(path, &info) == 0)
        let fd = open(path, O_WRONLY)
        #expect(fd >= 0)
        var bytes = version.bigEndian
        #expect(pwrite(fd, &bytes, 4, 60) == 4)
        close(fd)
        var times = [info.st_atim, info.st_mtim]
        if !keepStamp { times[1].tv_sec += 2 }
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
    }

    @Test func statusOfAnUnchangedFileReadsItOnceAndAChangedOneAgain() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        _ = try store(dir).open(alice)
        let path = try store(dir).root.accountPath(alice)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "the file's WAL was checkpointed away when it closed")
        // A stamp taken within a second of a change is not trusted (a write in the same clock tick keeps it).
        Thread.sleep(forTimeInterval: 1.1)

        // A store that never opened the account, as for an account no one switched to.
        let store = try store(dir)
        let first = store.status(alice)
        #expect(first.state == .current)
        #expect(first.version == 3)
        // Remembered with the file's stamp: the next Status answers from it while nothing changed.
        let remembered = store.known.withLock { $0[alice] }
        #expect(remembered?.facts.version == 3)
        #expect(store.status(alice).version == 3)

        // The bytes change with the modification time put back (`touch -r`): the status-change
        // time in the stamp tells, and Status reads the file again (hostile34c H1).
        try writeUserVersion(2, at: path, keepStamp: true)
        #expect(store.status(alice).version == 2)
        #expect(store.status(alice).state == .outdated)

        // The modification time changes too: Status reads the file again and sees what it now says.
        try writeUserVersion(1, at: path, keepStamp: false)
        let changed = store.status(alice)
        #expect(changed.version == 1)
        #expect(changed.state == .outdated)
    }

    /// What a Status read is not the deep check: opening a file that Status alone has read
    /// still runs `quick_check` first.
    @Test func aFileOnlyStatusReadIsStillScannedWhenOpened() throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        _ = try store(dir).open(alice)
        let path = try store(dir).root.accountPath(alice)
        _ = try Files.sqlite3(path, "CREATE TABLE filler (x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000) INSERT INTO filler SELECT randomblob(200) FROM c; PRAGMA wal_checkpoint(TRUNCATE);")
        let store = try store(dir)
        #expect(store.status(alice).state != .corrupt)
        // Damage the last page's header (a page of filler's b-tree), keeping the stamp: Status
        // never scans pages.
        var info = stat()
        #expect(lstat(path, &info) == 0)
        let fd = open(path, O_WRONLY)
        let garbage = [UInt8](repeating: 0xA5, count: 512)
        #expect(pwrite(fd, garbage, garbage.count, off_t(info.st_size) - 4096) == garbage.count)
        close(fd)
        var times = [info.st_atim, info.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        #expect(store.status(alice).state != .corrupt)
        let error = #expect(throws: AccountdError.self) { try store.open(alice) }
        #expect(error?.kind == .accountCorrupt)
        // The damaged page is read by the scan only: Status read the file twice without it.
        #expect(error?.message.contains("malformed") == true, "message: \(error?.message ?? "")")
    }
}
