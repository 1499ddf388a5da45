import AccountdProtocol
import Foundation

extension DataRoot {
    /// `accounts/`, opened without following a link; nil when it is missing.
    ///
    /// - Throws: `accountCorrupt` (naming `account`) when it is a link or not a folder.
    func accountsFolder(for account: AccountName? = nil) throws -> DataRootFolder? {
        try folder.subfolder("accounts", account: account)
    }

    /// `snapshots/<account>`, opened without following a link; nil when it (or `snapshots/`)
    /// is missing.
    ///
    /// - Throws: `accountCorrupt` when `snapshots/` or the account's folder is a link or not a folder.
    func snapshotFolder(_ account: AccountName) throws -> DataRootFolder? {
        try folder.subfolder("snapshots", account: account)?.subfolder(account.rawValue, account: account)
    }

    /// Refuses, with `accountCorrupt`, an account whose folders under the data root
    /// (`accounts/`, `snapshots/`, `snapshots/<account>`) are links or not folders, before
    /// anything is read or changed: SQLite and the snapshot code reach files by path, and
    /// would follow such a link out of the data root. Missing folders are not refused.
    ///
    /// Three `fstatat` calls; every locked operation of the store makes them first.
    public func refuseLinkedFolders(_ account: AccountName) throws {
        for name in ["accounts", "snapshots", "snapshots/" + account.rawValue] {
            let found = folder.entry(name)
            guard found == .missing || found == .directory else {
                throw DataRootFolder.notAFolder(path + "/" + name, found, account: account)
            }
        }
    }

    /// `.<account>.sqlite.<staging>`, the name in `accounts/` of ``stagingPath(_:_:)``.
    func stagingName(_ account: AccountName, _ staging: Staging) -> String {
        "." + account.rawValue + ".sqlite." + staging.rawValue
    }

    /// Removes what an earlier, interrupted operation left at the staging name of `account`
    /// and beside it (`-wal`, `-shm`, `-journal`, and `.tmp`, where Litestream wrote before it
    /// restored into a private folder), whatever it is: a file, a folder with what is in it,
    /// or a link (the link itself, never what it points to).
    ///
    /// - Throws: `accountCorrupt` when `accounts/` is a link; `storage` when a leftover
    ///   cannot be removed.
    func clearStaging(_ account: AccountName, _ staging: Staging) throws {
        guard let accounts = try accountsFolder(for: account) else { return }
        let name = stagingName(account, staging)
        for suffix in ["", "-wal", "-shm", "-journal", ".tmp"] { try accounts.remove(name + suffix) }
    }

    /// Makes `tmp/` (0700) when it is missing, at start, so that an import (which builds its
    /// file there) leaves the data root as it found it when it is refused. Whatever else is
    /// at that name (a link) is left alone: the operations that stage there refuse it.
    public func ensureTemporaryFolder() {
        if folder.entry("tmp") == .missing { _ = mkdir(temporaryDirectory, 0o700) }
    }

    /// Removes the copies that exports and imports staged in `tmp/` (`export-*`, `import-*`)
    /// and a crash left behind,
    /// through the folder's descriptor: a `tmp` that is a link is left alone, never followed.
    ///
    /// - Returns: how many were removed.
    /// - Throws: `accountCorrupt` when `tmp` is a link or not a folder; `storage` when a copy
    ///   cannot be removed.
    @discardableResult
    public func clearStagedExports() throws -> Int {
        guard let temporary = try folder.subfolder("tmp") else { return 0 }
        let staged = temporary.names().filter { $0.hasPrefix("export-") || $0.hasPrefix(AccountImport.stagingPrefix) }
        for name in staged { try temporary.remove(name) }
        return staged.count
    }

    /// Finishes purges that a crash or a failed deletion interrupted: for every
    /// `.<account>.purging` left in `accounts/` or `snapshots/` (``AccountPurge``), the purge
    /// of that account runs again to its end, erasing what was moved aside and whatever
    /// of the account was not moved yet (its file, snapshots, staging names). An erasure
    /// that was asked for is finished, never half-undone, so no byte of the account
    /// outlives a restart of the daemon. Nothing is followed through a link.
    ///
    /// - Returns: the accounts whose purge was finished.
    @discardableResult
    public func finishInterruptedPurges() throws -> [AccountName] {
        var accounts: Set<String> = []
        for name in ["accounts", "snapshots"] {
            guard let parent = try folder.subfolder(name) else { continue }
            for entry in parent.names() where entry.hasPrefix(".") && entry.hasSuffix(".purging") {
                accounts.insert(String(entry.dropFirst().dropLast(".purging".count)))
            }
        }
        var finished: [AccountName] = []
        for raw in accounts.sorted() {
            guard let account = try? AccountName(raw) else { continue }
            _ = try AccountPurge(root: self, account: account).run(accounts: try accountsFolder(for: account))
            finished.append(account)
        }
        return finished
    }
}

extension DataRoot {
    /// What operations interrupted by a crash (kill -9, power loss) left in the data root,
    /// removed at the daemon's start, before anything is served (nothing can be staging then:
    /// the data root's lock is held): every account's staging names (a restore's full copy,
    /// a half-made account, a pull's or an import's copy) and the temporary files of
    /// snapshots being taken. Links are removed themselves, never followed.
    ///
    /// - Returns: how many entries were removed.
    public func clearInterruptedWork() throws -> Int {
        var removed = 0
        if let accounts = try folder.subfolder("accounts") {
            let stagings = Staging.allCases.map { ".sqlite." + $0.rawValue }
            for name in accounts.names() where name.hasPrefix(".") {
                let stem = name.dropFirst()
                guard let staging = stagings.first(where: { stem.contains($0) }),
                    let end = stem.range(of: staging),
                    (try? AccountName(String(stem[..<end.lowerBound]))) != nil
                else { continue }
                try accounts.remove(name)
                removed += 1
            }
        }
        if let snapshots = try folder.subfolder("snapshots") {
            for account in snapshots.names() {
                guard (try? AccountName(account)) != nil, let each = try? snapshots.subfolder(account) else { continue }
                for name in each.names() where name.hasPrefix(".") && name.hasSuffix(".tmp") {
                    try each.remove(name)
                    removed += 1
                }
            }
        }
        return removed
    }
}
