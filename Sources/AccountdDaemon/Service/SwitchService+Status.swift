import AccountdCore
import AccountdProtocol

/// What `Status` and `List` say, and how a failure of the active account is kept for them.
extension SwitchService {
    /// The daemon's status as `uid` sees it: its own active account (`Status` without
    /// `account`). Never waits.
    ///
    /// It never claims more than is true: `ready` only for an active account at the bundle's
    /// version (or newer and readable by it); `failed` or `too_new`, with the error, after an
    /// attempt to bring it to the bundle failed; `migrating` while its migration runs or waits
    /// to begin its first step (with a `problem` saying what it waits for); `outdated` for an
    /// active account below the bundle that nothing migrates; `opening` while start-up has not opened the saved account;
    /// `idle`, with the reason, when it could not.
    func daemonStatus(for uid: UInt32) -> DaemonStatus {
        let (active, version, failure, opening) = state.withLock { state in
            let active = state.active[uid]
            return (active, active.flatMap { state.versions[$0] }, state.failures[uid], state.opening[uid])
        }
        let target = stores.current.targetVersion
        let condition: DaemonStatus.State
        var problem: String?
        if let active {
            if board.isMigrating(active) {
                condition = .migrating
            } else if let failure, failure.account == active {
                condition = failure.tooNew ? .tooNew : .failed
                problem = failure.message
            } else if let version, version < target, board.isOpening(active) {
                // Its migration has begun and waits: for the account's hold, its snapshot, or
                // the write lock another process holds (the lock timeout bounds the wait).
                condition = .migrating
                problem =
                    "the migration of account \(active) from version \(version) to \(target) has begun and is waiting to start its first step: "
                    + "taking the before-migrate snapshot, or waiting for the account's lock (another operation, or another process holding the file: 'fuser' on it names it)"
            } else if let version, version < target {
                condition = .outdated
            } else {
                condition = .ready
            }
        } else if let opening {
            condition = .opening
            problem = opening.problem ?? "opening the saved active account \(opening.account)"
        } else {
            // No active account: with the reason the saved one could not be opened, if so.
            condition = .idle
            problem = failure?.message
        }
        var status = DaemonStatus(active: active?.rawValue, state: condition.rawValue, version: version, bundleVersion: target, problem: problem)
        let migrations = board.migrations()
        if migrations.count > 0 {
            status.migrationsRunning = migrations.count
            status.oldestMigrationSeconds = Int(migrations.oldest?.components.seconds ?? 0)
        }
        return status
    }

    /// Keeps what a failed open of `account` says for `Status`, for each uid whose active
    /// account it is, and tells watchers of a failed migration or of an active account's failure.
    ///
    /// A busy account (another operation held it) says nothing about its file and is not kept.
    /// The version the file stayed at, when the error names it, becomes the active version.
    func noteFailure(_ account: AccountName, _ error: any Error, migrationRan: Bool) {
        let failure = error as? AccountdError
        let message = failure?.message ?? "\(error)"
        let busy = failure?.kind == .accountBusy && !migrationRan
        let kept = state.withLock { state -> Bool in
            let uids = state.uids(of: account)
            guard !busy, !uids.isEmpty else { return false }
            for uid in uids { state.failures[uid] = Failure(account: account, message: message, tooNew: failure?.kind == .accountTooNew) }
            if let stayed = failure?.fromVersion { state.versions[account] = stayed }
            return true
        }
        guard migrationRan || kept else { return }
        let name = failure?.wireName.rawValue ?? ErrorName.internalError.rawValue
        hub.publish(.watched(.failed(.init(account: account.rawValue, error: name, message: message, version: failure?.fromVersion))))
    }

    /// One account's status and, when it exists, what it takes on disk, part by part
    /// (`lstat` only: no file is opened); never waits for a migration. Every look at the
    /// disk (an `lstat` included) is on the blocking pool, never on the caller's event loop,
    /// in one trip there for both.
    func accountStatus(_ account: AccountName) async throws -> (status: AccountStatus, disk: DiskUseInfo?) {
        let store = stores.current
        let root = root
        let (board, failure) = (board, failedAccounts.failure(of: account))
        return try await pool.run {
            guard board.isMigrating(account) else {
                var status = store.status(account)
                AccountView.apply(to: &status, failure: failure, migrating: false)
                return (status, status.exists ? DiskUseInfo(AccountDiskUse.of(account, in: root)) : nil)
            }
            // The version it is at (its header: the migration is not committed yet), and
            // `target` the one it migrates to.
            let status = AccountStatus(
                account: account, exists: true, version: store.headerVersion(account), target: store.targetVersion, state: .migrating,
                sizeBytes: store.sizeOnDisk(account))
            return (status, DiskUseInfo(AccountDiskUse.of(account, in: root)))
        }
    }

    /// Every account's name, in order.
    func accountNames() async throws -> [AccountName] {
        let store = stores.current
        return try await pool.run { store.root.accountNames() }
    }

    /// Every account with its size, and with `details` its version and state, as `List`
    /// replies them: only those fields are kept, so that listing a fleet of 100,000 accounts
    /// holds a few megabytes for a moment, not a full status of each.
    ///
    /// Only the accounts `include` allows are listed (a non-admin's readable ones).
    func list(details: Bool, include: @escaping @Sendable (AccountName) -> Bool = { _ in true }) async throws -> [ListEntry] {
        let (store, board) = (stores.current, board)
        let failures = failedAccounts.all()
        return try await pool.run {
            let locks = details ? OtherProcessLocks.read() : nil
            return store.root.accountNames().filter(include).map { account in
                guard details else { return ListEntry(account: account.rawValue, sizeBytes: store.sizeOnDisk(account)) }
                // The status has read the size already.
                var status = store.status(account, locks: locks)
                AccountView.apply(to: &status, failure: failures[account], migrating: board.isMigrating(account))
                return ListEntry(
                    account: account.rawValue, sizeBytes: status.sizeBytes,
                    details: ListEntry.Details(
                        version: status.version, state: status.state.rawValue, disk: DiskUseInfo(AccountDiskUse.of(account, in: store.root))))
            }
        }
    }

    /// The watchdog's store read (``LivenessCheck``): reads `state.json` under the data root
    /// and the daemon's shared state (the status of the daemon's own uid).
    ///
    /// Cheap, and it touches no account file, takes no account lock and needs no pool thread,
    /// so neither a long migration nor a busy client holds it up; a data root that no longer
    /// answers, or shared state that stays locked, does.
    func livenessRead() {
        _ = try? record.read()
        _ = daemonStatus(for: ownUID)
    }
}
