#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension DataRoot {
    /// The data root's owner and group when this process runs as root and the data root
    /// belongs to another user (an offline tool run by hand as root on the daemon's data
    /// root); nil otherwise. What such a process creates goes to them (``keepOwner()``), and
    /// Litestream runs as them: it cannot write anywhere the data root's owner cannot,
    /// whatever that owner planted in the data root.
    public func foreignOwner() -> LitestreamProgram.User? {
        var info = stat()
        guard geteuid() == 0, fstat(folder.descriptor, &info) == 0, info.st_uid != 0 else { return nil }
        return LitestreamProgram.User(uid: info.st_uid, gid: info.st_gid)
    }

    /// Gives what this process created under the data root to the data root's owner and
    /// group, when this process runs as root and the data root belongs to another user.
    ///
    /// The offline tools (`accountd migrate`, `accountd pull`) run by hand as root would
    /// otherwise leave root-owned files and folders (`accountd.lock`, `accounts/`,
    /// `snapshots/`, account files, snapshots) that the daemon, running as its own user,
    /// cannot open. Every entry owned by this process's user is handed over with
    /// `fchownat(AT_SYMLINK_NOFOLLOW)`, folder by folder through ``DataRootFolder``: no
    /// link is followed, and nothing outside the data root changes.
    ///
    /// - Returns: how many entries were handed over.
    /// - Throws: `storage` naming the entry that could not be handed over.
    @discardableResult
    public func keepOwner() throws -> Int {
        guard let owner = foreignOwner() else { return 0 }
        return try Self.handOver(in: folder, to: owner.uid, group: owner.gid, from: geteuid())
    }

    /// Gives the entry `name` of the data root's own folder to the data root's owner and
    /// group, as ``keepOwner()`` does for everything, when this process runs as root and the
    /// data root belongs to another user; the entry itself, never what a link points to.
    ///
    /// - Throws: `storage` when it cannot be handed over.
    func keepOwner(of name: String) throws {
        guard let owner = foreignOwner() else { return }
        guard fchownat(folder.descriptor, name, owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw AccountdError.storage("giving the data root's owner", path: folder.path + "/" + name, errno: errno)
        }
    }

    private static func handOver(in folder: DataRootFolder, to owner: uid_t, group: gid_t, from me: uid_t) throws -> Int {
        var count = 0
        for name in folder.names() {
            guard let info = folder.status(name) else { continue }
            if info.st_uid == me {
                guard fchownat(folder.descriptor, name, owner, group, AT_SYMLINK_NOFOLLOW) == 0 else {
                    throw AccountdError.storage("giving the data root's owner", path: folder.path + "/" + name, errno: errno)
                }
                count += 1
            }
            if info.st_mode & S_IFMT == S_IFDIR, let sub = try folder.subfolder(name) {
                count += try handOver(in: sub, to: owner, group: group, from: me)
            }
        }
        return count
    }
}
