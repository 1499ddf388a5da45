import AccountdProtocol
import Foundation

extension DataRoot {
    /// The names SQLite uses for `device.sqlite`: the file, and its `-wal`, `-shm` and `-journal`.
    static let deviceFileNames = ["device.sqlite", "device.sqlite-wal", "device.sqlite-shm", "device.sqlite-journal"]

    /// Refuses `device.sqlite` when it, or what SQLite keeps beside it (`-wal`, `-shm`,
    /// `-journal`), is anything but a regular file or missing: SQLite opens them by path, and
    /// would write device-wide preferences wherever a link planted there points (creating the
    /// target of a dangling one). Each name is looked at through the data root's descriptor,
    /// without following a link (``DataRootFolder/entry(_:)``).
    ///
    /// - Throws: ``AccountdError`` (`storage`) naming the file, saying that nothing was
    ///   written and what to do.
    public func refuseLinkedDeviceFile() throws {
        for name in Self.deviceFileNames {
            let found = folder.entry(name)
            switch found {
            case .missing, .regularFile:
                continue
            case .symlink, .directory, .other:
                let what = found == .symlink ? "is a symbolic link" : found == .directory ? "is a folder" : "is not a regular file"
                throw AccountdError(
                    .storage,
                    "\(path)/\(name) \(what); accountd never follows links inside the data root and keeps device-wide preferences "
                        + "only in a file of its own, so nothing was written there. Move it aside (put the file itself there, "
                        + "or nothing: a new device.sqlite is made) and start accountd again",
                    file: path + "/" + name)
            }
        }
    }
}
