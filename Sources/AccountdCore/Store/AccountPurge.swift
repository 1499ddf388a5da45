import AccountdProtocol

/// Erases everything of one account under the data root, all or nothing.
///
/// First everything of the account is moved aside, by renames inside the data root:
/// its file and what SQLite keeps beside it, its staging files, Litestream's local state
/// into `accounts/.<account>.purging/`, and its snapshot folder to
/// `snapshots/.<account>.purging`. Should a rename fail, those done are put back and the
/// account is as it was. Only then is what was moved aside deleted, without following a
/// link. A purge that fails while deleting leaves the account gone and the staging names
/// behind, which the next purge of the account erases (``hasLeftovers``).
///
/// Every name is reached through ``DataRootFolder``: nothing outside the data root is
/// ever touched, whatever links were planted in it.
struct AccountPurge {
    let root: DataRoot
    let account: AccountName

    /// `.<account>.purging`: the staging name, in `accounts/` and in `snapshots/`, that no
    /// account can have (it begins with `.`).
    var stagingName: String { "." + account.rawValue + ".purging" }

    /// The account's names in `accounts/` besides its staging folder, present or not.
    private var accountNames: [String] {
        let file = account.rawValue + ".sqlite"
        let staged = DataRoot.Staging.allCases.map { root.stagingName(account, $0) }
        let companions = ([file] + staged).flatMap { name in ["", "-wal", "-shm", "-journal"].map { name + $0 } }
        return companions + ["." + file + "-litestream"]
    }

    /// Whether something of the account other than its file and snapshot folder is under
    /// the data root: what a failed purge left at its staging names, or a failed pull,
    /// creation or restore at theirs, or a `-wal` without its file.
    func hasLeftovers(accounts: DataRootFolder?) throws -> Bool {
        if let accounts, (accountNames + [stagingName]).contains(where: { accounts.entry($0) != .missing }) { return true }
        return try root.folder.subfolder("snapshots", account: account)?.entry(stagingName) ?? .missing != .missing
    }

    /// Moves everything of the account aside, then deletes it.
    ///
    /// - Parameter accounts: `accounts/`, opened by the caller (who checked the account's file).
    /// - Returns: how many snapshots were erased.
    /// - Throws: `accountCorrupt` when a folder of the account is a link (nothing changed);
    ///   `storage` when a rename fails (nothing changed) or a deletion fails (the account is
    ///   gone; purging it again finishes the erasure, as the message says).
    func run(accounts: DataRootFolder?) throws -> Int {
        let snapshots = try root.folder.subfolder("snapshots", account: account)
        let snapshotFolder = try snapshots?.subfolder(account.rawValue, account: account)
        let temporary = try root.folder.subfolder("tmp", account: account)
        let count = snapshotFolder?.names().filter { $0.hasSuffix(".sqlite") && !$0.hasPrefix(".") }.count ?? 0

        // What an earlier purge left aside is gone from view already: erase it first.
        do {
            try accounts?.remove(stagingName)
            try snapshots?.remove(stagingName)
        } catch {
            throw AccountdError(
                .storage, "purging account \(account) failed while erasing what an earlier purge left: \(ErrorText.of(error)); purge it again",
                account: account.rawValue, file: root.path)
        }
        let present = accounts.map { accounts in accountNames.filter { accounts.entry($0) != .missing } } ?? []
        var moved: [String] = []
        var aside: DataRootFolder?
        do {
            if let accounts, !present.isEmpty {
                let folder = try accounts.makeSubfolder(stagingName, account: account)
                aside = folder
                for name in present {
                    if try accounts.move(name, to: name, in: folder) { moved.append(name) }
                }
            }
            if let snapshots, snapshotFolder != nil {
                try snapshots.move(account.rawValue, to: stagingName, in: snapshots)
            }
        } catch {
            if let accounts, let aside {
                for name in moved.reversed() { _ = try? aside.move(name, to: name, in: accounts) }
                _ = try? accounts.remove(stagingName)
            }
            if let error = error as? AccountdError, error.kind == .accountCorrupt { throw error }
            throw AccountdError(
                .storage, "purging account \(account) failed before anything was erased: \(ErrorText.of(error)); the account is as it was",
                account: account.rawValue, file: root.path)
        }
        do {
            try accounts?.sync()
            try snapshots?.sync()
            try accounts?.remove(stagingName)
            try snapshots?.remove(stagingName)
            if let temporary {
                for name in temporary.names() where Exporter.isStagedCopy(name, of: account) { try temporary.remove(name) }
                try temporary.sync()
            }
            try accounts?.sync()
            try snapshots?.sync()
        } catch {
            throw AccountdError(
                .storage,
                "account \(account) is gone, but erasing what was moved aside failed: \(ErrorText.of(error)); "
                    + "purge it again ('accountctl remove \(account) --purge') to finish the erasure",
                account: account.rawValue, file: root.path)
        }
        return count
    }
}
