import AccountdProtocol
import Foundation

/// The data root: where every account file, snapshot and the saved state live.
///
/// ```
/// <data-root>/
///   state.json                          the active account (see ActiveAccountRecord)
///   accounts/<account>.sqlite           one file per account (+ -wal / -shm)
///   device.sqlite                       device-wide preferences
///   snapshots/<account>/<name>.sqlite   copies taken before migrations, restores and removals, and on demand
/// ```
///
/// Folders are 0700 and files 0600: nothing under the data root is ever
/// world-readable. Paths are built only from validated ``AccountName``s.
///
/// The data root is opened once as a folder (``folder``); what removes, moves, lists or
/// stages files reaches them relative to it, one name at a time, never through a link
/// (``DataRootFolder``). SQLite opens account files by path, so every locked operation of
/// the store first checks that none of the account's folders is a link
/// (``refuseLinkedFolders(_:)``), and ``AccountInspector`` that the file is not one.
public struct DataRoot: Sendable {
    /// The absolute path of the data root.
    public let path: String
    /// The data root, opened once.
    public let folder: DataRootFolder

    /// Opens (and creates, if needed) the data root at `path`, tightening folder modes to 0700.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when a folder cannot be created.
    public init(_ path: String) throws {
        self.path = URL(fileURLWithPath: path).standardizedFileURL.path
        try FileSystem.ensureDirectory(self.path)
        folder = try DataRootFolder.root(self.path)
        try FileSystem.ensureDirectory(accountsDirectory)
        try FileSystem.ensureDirectory(snapshotsDirectory)
    }

    /// Opens the data root at `path` for reading only: nothing is created and no mode is
    /// changed (`accountd plan`). A missing `accounts/` holds no account.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when `path` is not a folder that can be opened,
    ///   or is a symbolic link.
    public init(readingOnly path: String) throws {
        self.path = URL(fileURLWithPath: path).standardizedFileURL.path
        guard FileSystem.entry(at: self.path) == .directory else {
            throw AccountdError(
                .storage, "the data root \(self.path) is not a folder (symlinks are not followed); check --data-root", file: self.path)
        }
        folder = try DataRootFolder.root(self.path)
    }

    public var accountsDirectory: String { path + "/accounts" }
    public var snapshotsDirectory: String { path + "/snapshots" }
    public var statePath: String { path + "/state.json" }
    public var devicePath: String { path + "/device.sqlite" }
    /// `tmp/`: copies staged for exports; emptied of them when the daemon starts.
    public var temporaryDirectory: String { path + "/tmp" }

    /// `accounts/<account>.sqlite`.
    public func accountPath(_ account: AccountName) -> String {
        accountsDirectory + "/" + account.rawValue + ".sqlite"
    }

    /// Why the store builds an account file under a temporary name before moving it into place.
    public enum Staging: String, CaseIterable, Sendable {
        /// A new account being created.
        case creating
        /// A snapshot being copied back.
        case restoring
        /// A copy being restored from a Litestream replica (``ReplicaPull``).
        case pulling
        /// The replica's state at a past time, before it is written into the account
        /// (``ReplicaTimeTravel``).
        case rewinding
        /// A file being imported (``AccountImport``).
        case importing
    }

    /// `accounts/.<account>.sqlite.<staging>`: a name no account can have (it begins with `.`).
    public func stagingPath(_ account: AccountName, _ staging: Staging) -> String {
        accountsDirectory + "/." + account.rawValue + ".sqlite." + staging.rawValue
    }

    /// `accounts/.<account>.sqlite-litestream`: where Litestream keeps its local copy of the
    /// account's recent changes (LTX files) while it replicates the account. A purge erases it.
    public func litestreamStatePath(_ account: AccountName) -> String {
        accountsDirectory + "/." + account.rawValue + ".sqlite-litestream"
    }

    /// `snapshots/<account>`.
    public func snapshotDirectory(_ account: AccountName) -> String {
        snapshotsDirectory + "/" + account.rawValue
    }

    /// Every account that has a file, sorted by name. Files whose names are not valid
    /// account names (temporary files, strays) are not accounts and are left out; an
    /// `accounts/` that is a link holds none.
    public func accountNames() -> [AccountName] {
        ((try? folder.subfolder("accounts"))??.names() ?? []).compactMap { file -> AccountName? in
            guard file.hasSuffix(".sqlite") else { return nil }
            return try? AccountName(String(file.dropLast(".sqlite".count)))
        }.sorted()
    }
}
