import AccountdProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Litestream's local state under the data root, reset when Litestream is about to start
/// with a replica other than the one that state was built for (`accountd prepare-litestream`,
/// which the `accountd-litestream` unit runs before Litestream: `ExecStartPre=`).
///
/// Litestream keeps, beside each database, the changes it has shipped
/// (`accounts/.<account>.sqlite-litestream/`, `.device.sqlite-litestream/`), and goes on from
/// them at its next start. Against a new, empty replica that fails once its early files have
/// expired (`open ltx file ... no such file`): nothing older reaches the new replica, ever.
/// Without that state Litestream starts afresh and ships a full copy of every database.
///
/// `litestream-replica` in the data root records the store (``ReplicaAddress/storeIdentity(_:)``:
/// no user name or password) the state was last reset for. When the replica Litestream is
/// about to use is another store, every state folder is removed (only Litestream's own
/// bookkeeping: never an account's data), through the data root's folders, never through a
/// link; then the record is written. Without a record, state folders of unknown origin are
/// reset too (once, after an upgrade: one full upload), and no state at all is only recorded.
/// A removal that fails leaves the old record, so the next start tries again.
public struct LitestreamStateReset: Sendable {
    /// The record's name in the data root.
    public static let recordName = "litestream-replica"

    public let root: DataRoot

    public init(root: DataRoot) {
        self.root = root
    }

    /// What ``run(for:)`` did.
    public enum Outcome: Sendable, Equatable {
        /// The state was built for this store already: nothing changed.
        case kept
        /// No state and no record: the record was written.
        case recorded
        /// The state was built for `previous` (nil: unknown); `folders` were removed and the
        /// record written.
        case reset(previous: String?, folders: Int)
    }

    /// The store the state was last reset for, as recorded; nil without a readable record
    /// (a link or anything but a small regular file counts as none).
    public func recordedStore() -> String? {
        guard case .regularFile(let size) = root.folder.entry(Self.recordName), size <= 4096,
            let fd = try? root.folder.openFile(Self.recordName, O_RDONLY)
        else { return nil }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        guard let data = try? handle.readToEnd() else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// Litestream's state folders present now, as paths relative to the data root:
    /// `accounts/.<name>.sqlite-litestream` and `.device.sqlite-litestream`.
    public func stateFolders() throws -> [String] {
        var found: [String] = []
        if root.folder.entry(Self.deviceState) != .missing { found.append(Self.deviceState) }
        if let accounts = try root.folder.subfolder("accounts") {
            found += accounts.names().filter(Self.isStateName).sorted().map { "accounts/" + $0 }
        }
        return found
    }

    /// Whether starting Litestream on `replica` needs the state reset: the recorded store is
    /// another, or there is no record and some state.
    public func needsReset(for replica: String) throws -> Bool {
        let recorded = recordedStore()
        if recorded == ReplicaAddress.storeIdentity(replica) { return false }
        if recorded != nil { return true }
        return try !stateFolders().isEmpty
    }

    /// Resets the state when ``needsReset(for:)`` says so, and records `replica`'s store.
    /// Call it only while Litestream is not running (it would go on from what it holds in memory).
    ///
    /// - Throws: `accountCorrupt` when `accounts/` is a link, `storage` naming what could not
    ///   be removed or written (the record is then left as it was).
    public func run(for replica: String) throws -> Outcome {
        let store = ReplicaAddress.storeIdentity(replica)
        let recorded = recordedStore()
        if recorded == store { return .kept }
        let folders = try stateFolders()
        if recorded == nil && folders.isEmpty {
            try writeRecord(store)
            return .recorded
        }
        try root.folder.remove(Self.deviceState)
        if let accounts = try root.folder.subfolder("accounts") {
            for name in accounts.names() where Self.isStateName(name) { try accounts.remove(name) }
            try accounts.sync()
        }
        try root.folder.sync()
        try writeRecord(store)
        return .reset(previous: recorded, folders: folders.count)
    }

    /// `.device.sqlite-litestream`: device.sqlite's state, in the data root.
    static let deviceState = ".device.sqlite-litestream"

    /// Whether `name` in `accounts/` is an account's state folder (`.<name>.sqlite-litestream`).
    static func isStateName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(".sqlite-litestream") && name.count > ".sqlite-litestream".count + 1
    }

    /// Writes the record durably (a link at its name is replaced, never followed), owned
    /// like the data root when this process is root.
    private func writeRecord(_ store: String) throws {
        try FileSystem.atomicWrite(Data((store + "\n").utf8), to: root.path + "/" + Self.recordName)
        try root.keepOwner(of: Self.recordName)
    }
}
