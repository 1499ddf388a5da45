import AccountdProtocol
import Foundation

/// The record that an account was handed off from this host (`Remove {handoff: true}`):
/// `moved/<account>` under the data root, a small JSON file (0600, in a 0700 folder).
///
/// While it exists, every locked operation of the store on the account is refused with
/// `accountMoved` (``AccountStore/underLock(_:holding:allowingMoved:_:)``), except those that end
/// the handoff: a `Pull` (the account comes back), a `Restore {reclaim: true}` and a purge.
/// It is written durably (the file and its folder fsynced) before the final sync of the
/// handoff, so a crash or restart at any point after leaves the account refused; it is
/// erased, durably, only when the account is pulled back, reclaimed or purged.
extension DataRoot {
    /// `moved/`: one record per account handed off from this host.
    public var handoffDirectory: String { path + "/moved" }

    /// `moved/<account>`.
    public func handoffPath(_ account: AccountName) -> String { handoffDirectory + "/" + account.rawValue }

    /// Whether `account` was handed off from this host. Anything at the record's name
    /// counts (even a record that cannot be read, or a link): a fence that fails open
    /// would let two hosts serve one account.
    public func isHandedOff(_ account: AccountName) -> Bool {
        folder.entry("moved") != .missing && folder.entry("moved/" + account.rawValue) != .missing
    }

    /// When and where to `account` was handed off, as its record says; nil without a record
    /// or when it cannot be read. Only a regular file of at most 64 KiB is read (a record is
    /// about 200 bytes): a link or a large file planted there is not followed or loaded.
    public func handoffRecord(_ account: AccountName) -> (at: String, replica: String?)? {
        guard isHandedOff(account), case .regularFile(let size) = folder.entry("moved/" + account.rawValue), size <= 64 << 10,
            let data = FileManager.default.contents(atPath: handoffPath(account)),
            let value = try? JSONParser.parse(String(decoding: data, as: UTF8.self)), let at = value["handedOffAt"]?.stringValue
        else { return nil }
        return (at, value["replica"]?.stringValue)
    }

    /// Refuses `account` with `accountMoved` when it was handed off from this host.
    public func refuseHandedOff(_ account: AccountName) throws {
        guard isHandedOff(account) else { return }
        let said = handoffRecord(account)
        let when = said.map { " at \($0.at)" } ?? ""
        let whereTo = said?.replica.map { " to the replica \($0)" } ?? ""
        throw AccountdError(
            .accountMoved,
            "account \(account) was handed off from this host\(when)\(whereTo) and is served by the host that pulled it; "
                + "this host refuses it until it is pulled back ('accountctl pull \(account) --replica URL'). "
                + "'accountctl restore \(account) --reclaim' takes it back from a snapshot here instead, and then two hosts may hold diverging copies",
            account: account.rawValue, file: handoffPath(account))
    }

    /// Writes the record of `account`'s handoff durably: the file, then `moved/`, fsynced.
    ///
    /// - Parameter replica: the replica the account was synced to, with any password masked.
    /// - Throws: `storage` when it cannot be written; `accountCorrupt` when `moved` is a link.
    public func recordHandoff(_ account: AccountName, replica: String, at date: Date = Date()) throws {
        if folder.entry("moved") == .missing {
            _ = try folder.makeSubfolder("moved", account: account)
            try folder.sync()
        }
        _ = try folder.makeSubfolder("moved", account: account)
        var text = "{\"account\":"
        JSONValue.writeString(account.rawValue, to: &text)
        text += ",\"handedOffAt\":"
        JSONValue.writeString(Timestamp.string(date), to: &text)
        text += ",\"replica\":"
        JSONValue.writeString(replica, to: &text)
        text += "}\n"
        try FileSystem.atomicWrite(Data(text.utf8), to: handoffPath(account))
    }

    /// Erases the record of `account`'s handoff, durably; no record is not an error.
    ///
    /// - Throws: `storage` when it cannot be removed.
    public func eraseHandoff(_ account: AccountName) throws {
        guard let moved = try folder.subfolder("moved", account: account) else { return }
        guard moved.entry(account.rawValue) != .missing else { return }
        try moved.remove(account.rawValue)
        try moved.sync()
    }
}
