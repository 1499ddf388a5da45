#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension DataRoot {
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
        let me = geteuid()
        var info = stat()
        guard me == 0, fstat(folder.descriptor, &info) == 0, info.st_uid != me else { return 0 }
        return try Self.handOver(in: folder, to: info.st_uid, group: info.st_gid, from: me)
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
