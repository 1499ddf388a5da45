import Testing

@testable import AccountdCore

/// `/proc/locks` is read as bytes (`OtherProcessLocks`): only another process's write lock
/// over SQLite's shared-lock range, not waiting, names a file.
@Suite struct OtherProcessLocksTests {
    @Test func onlyAnotherProcesssWriteLockOnTheSharedRangeCounts() {
        let text = """
            1: POSIX  ADVISORY  WRITE 4321 08:01:1001 1073741826 1073742335
            2: POSIX  ADVISORY  WRITE 4321 08:01:1002 0 EOF
            3: POSIX  ADVISORY  READ  4321 08:01:1003 1073741826 1073742335
            4: POSIX  ADVISORY  WRITE 999 08:01:1004 1073741826 1073742335
            4: -> POSIX  ADVISORY  WRITE 4321 08:01:1005 1073741826 1073742335
            5: POSIX  ADVISORY  WRITE 4321 08:01:1006 120 128
            6: OFDLCK ADVISORY  WRITE -1 fd:00:1007 1073741824 1073741826
            7: POSIX  ADVISORY  WRITE 4321 08:01:1008 1073742336 EOF
            8: FLOCK  ADVISORY  WRITE 4321 08:01:1009 0 EOF
            9: POSIX  ADVISORY  WRITE 4321 08:01:notanumber 0 EOF
            10: POSIX  ADVISORY  WRITE 4321 08:01:1010
            11: POSIX  ADVISORY  WRITE 4321 08:01:1011 1073742335 1073742335
            """
        let locks = OtherProcessLocks.parse(text, ownPID: 999)
        #expect(locks.inodes == [1001, 1002, 1007, 1009, 1011])
        #expect(OtherProcessLocks.parse("", ownPID: 999).inodes.isEmpty)
        #expect(OtherProcessLocks.parse("1: POSIX  ADVISORY  WRITE 4321 08:01:1001 0 EOF", ownPID: 999).inodes == [1001])
    }

    @Test func theMachinesLocksAreRead() {
        // Whatever is locked now: reading never fails, and this process's own locks are left out.
        _ = OtherProcessLocks.read()
    }
}
