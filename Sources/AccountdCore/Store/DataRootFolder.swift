import AccountdProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A folder of the data root, opened once, whose entries are reached relative to its
/// descriptor (`openat`, `fstatat`, `unlinkat`, `renameat`) and never through a link.
///
/// A path such as `root + "/snapshots/" + account` is resolved again by every call that
/// takes it, and a link planted in any of its folders takes the call elsewhere. A
/// `DataRootFolder` is reached from the data root's descriptor one name at a time with
/// `O_NOFOLLOW`: a folder that is a link is refused when it is opened, and nothing done
/// through the folder leaves it. Links found inside are removed as links, never followed.
///
/// `Sendable`: the descriptor is immutable and closed only by `deinit`.
public final class DataRootFolder: Sendable {
    /// The folder's path, for messages only: nothing is opened by it.
    public let path: String
    let descriptor: Int32

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Opens the data root itself at `path`. The data root's own path is the operator's to
    /// choose, links included; everything under it is reached through this descriptor.
    ///
    /// - Throws: `storage` when `path` is not a folder that can be opened.
    static func root(_ path: String) throws -> DataRootFolder {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw AccountdError.storage("opening the data root", path: path, errno: errno) }
        return DataRootFolder(descriptor: fd, path: path)
    }

    /// What `name` is, looked at without following a link (`fstatat(AT_SYMLINK_NOFOLLOW)`).
    func entry(_ name: String) -> FileSystem.Entry {
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return .missing }
        return FileSystem.Entry(info)
    }

    /// The file status of `name`, not following a link; nil when it is missing.
    func status(_ name: String) -> stat? {
        var info = stat()
        return fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// The folder `name` in this one; nil when nothing has that name.
    ///
    /// - Parameter account: the account the folder belongs to, named in the refusal.
    /// - Throws: `accountCorrupt` when `name` is a link or not a folder (nothing is followed
    ///   or changed), `storage` when it cannot be opened.
    func subfolder(_ name: String, account: AccountName? = nil) throws -> DataRootFolder? {
        let fd = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd >= 0 { return DataRootFolder(descriptor: fd, path: path + "/" + name) }
        let failure = errno
        switch entry(name) {
        case .missing: return nil
        case .directory: throw AccountdError.storage("opening the folder", path: path + "/" + name, errno: failure)
        case let other: throw Self.notAFolder(path + "/" + name, other, account: account)
        }
    }

    /// The folder `name` in this one, made (0700) when it is missing.
    ///
    /// - Throws: as ``subfolder(_:account:)``, or `storage` when it cannot be made.
    func makeSubfolder(_ name: String, account: AccountName? = nil) throws -> DataRootFolder {
        if mkdirat(descriptor, name, 0o700) != 0, errno != EEXIST {
            throw AccountdError.storage("creating the folder", path: path + "/" + name, errno: errno)
        }
        guard let folder = try subfolder(name, account: account) else {
            throw AccountdError.storage("opening the folder", path: path + "/" + name, errno: ENOENT)
        }
        _ = fchmod(folder.descriptor, 0o700)
        return folder
    }

    /// The names in the folder, without `.` and `..`.
    func names() -> [String] {
        // A descriptor of its own: readdir moves the offset, which a dup would share.
        let fd = openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = fdopendir(fd) else {
            if fd >= 0 { close(fd) }
            return []
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let item = readdir(stream) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes `name`, whatever it is: a file or a link (the link itself, never what it
    /// points to), or a folder with everything in it. A missing name is not an error.
    ///
    /// - Throws: `storage` naming what could not be removed; what was removed stays removed.
    func remove(_ name: String) throws {
        switch entry(name) {
        case .missing:
            return
        case .directory:
            if let folder = try subfolder(name) {
                for child in folder.names() { try folder.remove(child) }
            }
            guard unlinkat(descriptor, name, AT_REMOVEDIR) == 0 || errno == ENOENT else {
                throw AccountdError.storage("removing the folder", path: path + "/" + name, errno: errno)
            }
        default:
            guard unlinkat(descriptor, name, 0) == 0 || errno == ENOENT else {
                throw AccountdError.storage("removing", path: path + "/" + name, errno: errno)
            }
        }
    }

    /// Renames `name` to `newName` in `destination` (`renameat`), replacing nothing but an
    /// entry of the same kind there, as `rename` does.
    ///
    /// - Returns: false when `name` is missing.
    @discardableResult
    func move(_ name: String, to newName: String, in destination: DataRootFolder) throws -> Bool {
        guard renameat(descriptor, name, destination.descriptor, newName) == 0 else {
            if errno == ENOENT { return false }
            throw AccountdError.storage("moving \(path)/\(name) to", path: destination.path + "/" + newName, errno: errno)
        }
        return true
    }

    /// Opens the file `name` with `flags`, never through a link (`O_NOFOLLOW`).
    ///
    /// - Returns: the descriptor, the caller's to close.
    /// - Throws: `storage` with the reason (`ELOOP` for a link).
    func openFile(_ name: String, _ flags: Int32, mode: mode_t = 0o600) throws -> Int32 {
        let fd = openat(descriptor, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw AccountdError.storage("opening", path: path + "/" + name, errno: errno) }
        return fd
    }

    /// Flushes the folder, so that renames and removals in it survive power loss.
    func sync() throws {
        guard fsync(descriptor) == 0 else { throw AccountdError.storage("fsync of the folder", path: path, errno: errno) }
    }

    /// The refusal of `path`, which should be a folder and is `found`.
    static func notAFolder(_ path: String, _ found: FileSystem.Entry, account: AccountName?) -> AccountdError {
        let what = found == .symlink ? "is a symbolic link" : "is not a folder"
        return AccountdError(
            .accountCorrupt,
            "\(account.map { "account \($0): " } ?? "")\(path) \(what); accountd never follows links inside the data root, "
                + "and nothing was changed. Move it aside (put the folder itself there) and try again",
            account: account?.rawValue, file: path)
    }
}

extension FileSystem.Entry {
    /// The kind of entry a `stat` describes.
    init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: self = .regularFile(size: Int64(info.st_size))
        case S_IFDIR: self = .directory
        case S_IFLNK: self = .symlink
        default: self = .other
        }
    }
}
