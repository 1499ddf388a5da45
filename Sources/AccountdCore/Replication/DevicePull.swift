import AccountdProtocol
import Foundation
import GRDB

/// Brings `device.sqlite` (the device-wide preferences) back from the replica when a data
/// root has none, before the daemon would make a new, empty one: that new file would become
/// the replica's newest state within a second and hide the old device's values.
///
/// Litestream replicates `device.sqlite` to `<replica>/.device.sqlite` (``ReplicaURL/device``).
/// The copy is restored into a private folder made afresh, `.device.sqlite.pulling/` in the data
/// root (no one else can plant a link for Litestream to follow there), checked by SQLite's
/// `integrity_check`, put in WAL mode, synced and linked into place with `link()`, which never
/// replaces a file.
public struct DevicePull: Sendable {
    public var root: DataRoot
    public var replica: ReplicaURL
    public var command: ReplicaCommand

    public init(root: DataRoot, replica: ReplicaURL, litestream: LitestreamProgram) {
        self.root = root
        self.replica = replica
        command = ReplicaCommand(root: root, litestream: litestream)
    }

    /// What ``pullIfMissing(on:)`` did.
    public enum Outcome: Sendable, Equatable {
        /// `device.sqlite` is there already: nothing to do.
        case present
        /// The replica holds no `device.sqlite`: a new one may be made.
        case notInReplica
        /// Pulled, to this Litestream transaction.
        case pulled(txid: String?)
    }

    /// Pulls `device.sqlite` if the data root has none and the replica has one: Litestream is
    /// awaited (no thread waits for it), the file work runs on `blocking`.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the replica cannot be asked, or the copy
    ///   cannot be restored or is not sound; `device.sqlite` is then still missing, and nothing
    ///   else was changed.
    public func pullIfMissing(on blocking: some BlockingRunner) async throws -> Outcome {
        let root = self.root
        guard try await blocking.run({ root.folder.entry("device.sqlite") == .missing }) else { return .present }
        let source = replica.device
        guard !(try await command.files(source: source, redact: replica.redact, on: blocking)).isEmpty else { return .notInReplica }
        let temp = try await blocking.run { try Self.makeStaging(in: root) }
        do {
            let run = try await command.run("restore", ["-json", "-o", temp], source: source, on: blocking)
            let outcome = try await blocking.run { [self] in try install(run, from: temp) }
            try await blocking.run { Self.clear(root) }
            return outcome
        } catch {
            _ = try? await blocking.run { Self.clear(root) }
            throw error
        }
    }

    /// The private folder (0700) Litestream restores into, made afresh in the data root.
    static let stagingName = ".device.sqlite.pulling"

    /// Makes ``stagingName`` afresh (after removing what an earlier run left) and returns the
    /// file Litestream is to write in it. `litestream restore -o FILE` writes through
    /// `FILE.tmp`, following a link there: in a folder just made, only this process's user
    /// may enter, no one else can plant one. Blocking.
    private static func makeStaging(in root: DataRoot) throws -> String {
        clear(root)
        guard mkdirat(root.folder.descriptor, stagingName, 0o700) == 0 else {
            throw AccountdError.storage("creating the private folder Litestream restores device.sqlite into", path: root.path + "/" + stagingName, errno: errno)
        }
        return root.path + "/" + stagingName + "/device.sqlite"
    }

    /// Removes the staging folder, and what an earlier version left beside it (the staging
    /// file's companions and Litestream's `.tmp`), links as links, never followed. Blocking.
    private static func clear(_ root: DataRoot) {
        for suffix in ["", "-wal", "-shm", "-journal", ".tmp"] { try? root.folder.remove(stagingName + suffix) }
    }

    /// Checks the copy `litestream restore` (`run`) left at `temp` and links it into place. Blocking.
    private func install(_ run: LitestreamProgram.Run, from temp: String) throws -> Outcome {
        let shown = replica.redact(replica.device)
        guard run.status == 0 else {
            throw AccountdError(
                .storage,
                "device.sqlite is missing and restoring it from the replica \(shown) failed (exit status \(run.status)): \(replica.redact(run.errors.trimmingCharacters(in: .whitespacesAndNewlines))); nothing was created, so that an empty file does not replace the replica's. Fix the replica's access and start again",
                file: shown)
        }
        var info = stat()
        guard lstat(temp, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw AccountdError(.storage, "Litestream's copy of device.sqlite at \(temp) is not a regular file; nothing was changed", file: temp)
        }
        chmod(temp, 0o600)
        let queue = try DatabaseQueue(path: temp, configuration: Connections.configuration(foreignKeys: false, label: "device-pull"))
        let (problems, mode) = try queue.writeWithoutTransaction { db in
            (try String.fetchAll(db, sql: "PRAGMA integrity_check"), try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL"))
        }
        try queue.close()
        guard problems == ["ok"], mode?.lowercased() == "wal" else {
            throw AccountdError(
                .storage,
                "the replica's device.sqlite (\(shown)) fails SQLite's checks after restore (\(problems.prefix(3).joined(separator: "; ")), journal mode \(mode ?? "unknown")); nothing was changed",
                file: shown)
        }
        for suffix in ["-wal", "-shm"] { try FileSystem.removeIfPresent(temp + suffix) }
        try FileSystem.fsyncFile(temp)
        guard try FileSystem.linkIntoPlace(temp, at: root.devicePath) else { return .present }
        return .pulled(txid: (try? JSONParser.parse(run.output)).flatMap { $0["txid"]?.stringValue })
    }
}
