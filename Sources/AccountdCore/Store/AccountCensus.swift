import AccountdProtocol
import Synchronization

/// Where every account's file stands against the bundle, for the metrics, kept cheap
/// enough to take every scrape.
///
/// An account's state is read once (``AccountStore/status(_:)``, which never waits and
/// never writes) and remembered with the stamps of its file and WAL and the bundle's
/// version: the next census re-reads only the files that changed since, or all of them
/// after a reload brought another bundle. A stamp holds the status-change time
/// (``FileStamp``), so a write whose modification time was put back is seen too. Two `lstat` calls per unchanged account, and
/// one small entry each in memory; entries of accounts that are gone are dropped.
public final class AccountCensus: Sendable {
    private struct Entry: Sendable {
        var main: FileStamp?
        var wal: FileStamp?
        var target: Int
        var state: AccountStatus.State
    }

    private let entries = Mutex<[AccountName: Entry]>([:])

    public init() {}

    /// Each account's state under `store`'s bundle, for every account on disk. Blocking.
    ///
    /// - Parameter skip: accounts not to read now (being migrated by this daemon): they
    ///   keep the state last read, or count as `outdated` when none was.
    public func take(_ store: AccountStore, skip: (AccountName) -> Bool) -> [AccountName: AccountStatus.State] {
        let names = store.root.accountNames()
        let previous = entries.withLock { $0 }
        let locks = OtherProcessLocks.read()
        var next: [AccountName: Entry] = [:]
        next.reserveCapacity(names.count)
        for account in names {
            let path = store.root.accountPath(account)
            let (main, wal) = (FileStamp(path: path), FileStamp(path: path + "-wal"))
            // An unavailable file is read again each time (the disk freed, the lock let go), and a
            // lock another process took since the last read changes no stamp: it is looked for.
            if let known = previous[account], known.target == store.targetVersion, known.main == main, known.wal == wal,
                known.state != .unavailable, !locks.holds(main)
            {
                next[account] = known
            } else if skip(account) {
                next[account] = previous[account] ?? Entry(main: nil, wal: nil, target: store.targetVersion, state: .outdated)
            } else {
                let state = store.status(account, locks: locks).state
                // Stamped again after the read, which may leave an empty `-wal` beside the file:
                // the next census finds it unchanged. A file that changed during the read, or
                // so shortly before it that a write right after would keep its stamp, is
                // stamped as unknown, to be read again next time.
                let after = FileStamp(path: path)
                let unchanged = after == main && after?.settled() == true
                next[account] = Entry(
                    main: unchanged ? after : nil, wal: unchanged ? FileStamp(path: path + "-wal") : nil, target: store.targetVersion,
                    state: state)
            }
        }
        entries.withLock { $0 = next }
        return next.mapValues(\.state)
    }
}
