import AccountdProtocol
import Foundation

/// The bytes an account, or a whole data root, takes on disk, part by part: the file, its
/// WAL, its snapshots and Litestream's local state.
///
/// Read with `lstat` only: no file is opened, so no SQLite lock of this process is
/// disturbed (closing a descriptor of a file drops every POSIX lock the process holds on it).
public struct AccountDiskUse: Sendable, Hashable {
    /// The account files (`accounts/<account>.sqlite`).
    public var fileBytes: Int64 = 0
    /// Their write-ahead logs (`-wal`).
    public var walBytes: Int64 = 0
    /// Their snapshots (`snapshots/<account>/`).
    public var snapshotBytes: Int64 = 0
    /// How many snapshots.
    public var snapshotCount = 0
    /// Litestream's local state beside the files (`accounts/.<account>.sqlite-litestream/`);
    /// 0 without replication, as PROTOCOL.md says: a folder left from an earlier replication
    /// is not counted then (Litestream's own, it is removed with the account).
    public var litestreamBytes: Int64 = 0

    public init() {}

    /// Every part added up.
    public var totalBytes: Int64 { fileBytes + walBytes + snapshotBytes + litestreamBytes }

    /// What `account` takes on disk under `root`.
    public static func of(_ account: AccountName, in root: DataRoot) -> AccountDiskUse {
        var use = AccountDiskUse()
        let path = root.accountPath(account)
        use.fileBytes = FileSystem.size(of: path)
        use.walBytes = FileSystem.size(of: path + "-wal")
        (use.snapshotBytes, use.snapshotCount) = tree(root.snapshotDirectory(account))
        if Connections.replicated.load(ordering: .relaxed) { use.litestreamBytes = tree(root.litestreamStatePath(account)).bytes }
        return use
    }

    /// What every account under `root` takes, in one pass over `accounts/` and `snapshots/`.
    public static func total(in root: DataRoot) -> AccountDiskUse {
        var use = AccountDiskUse()
        let replicated = Connections.replicated.load(ordering: .relaxed)
        for name in FileSystem.contents(of: root.accountsDirectory) {
            let path = root.accountsDirectory + "/" + name
            if name.hasSuffix(".sqlite") {
                use.fileBytes += FileSystem.size(of: path)
            } else if name.hasSuffix(".sqlite-wal") {
                use.walBytes += FileSystem.size(of: path)
            } else if replicated, name.hasPrefix("."), name.hasSuffix(".sqlite-litestream") {
                use.litestreamBytes += tree(path).bytes
            }
        }
        for name in FileSystem.contents(of: root.snapshotsDirectory) {
            let (bytes, count) = tree(root.snapshotsDirectory + "/" + name)
            use.snapshotBytes += bytes
            use.snapshotCount += count
        }
        return use
    }

    /// The bytes of the regular files under `path` (itself, if it is one), and how many
    /// there are; symlinks are not followed.
    static func tree(_ path: String) -> (bytes: Int64, files: Int) {
        switch FileSystem.entry(at: path) {
        case .regularFile(let size): return (size, 1)
        case .directory:
            var total: (bytes: Int64, files: Int) = (0, 0)
            for name in FileSystem.contents(of: path) {
                let part = tree(path + "/" + name)
                total = (total.bytes + part.bytes, total.files + part.files)
            }
            return total
        default: return (0, 0)
        }
    }
}
