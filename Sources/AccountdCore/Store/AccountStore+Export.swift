import AccountdProtocol
import Foundation

extension AccountStore {
    /// Exports `account` in `format`, handing its data to `sink` as it is read.
    ///
    /// The account's lock is held while its file is found and checked, not while the data
    /// streams: the export reads one consistent transaction (see ``Exporter``), and a slow
    /// reader must not hold up a switch to the account.
    ///
    /// - Throws: ``AccountdError``: `accountNotFound`, `accountCorrupt` (not this account's
    ///   file), `accountBusy`, `storage`; or what `sink` throws (a client that went away).
    public func export(_ account: AccountName, format: ExportFormat, to sink: inout some ExportSink) throws -> ExportSummary {
        let exporter = try locks.withLock(account, timeout: options.lockTimeout) { () throws -> Exporter in
            let path = root.accountPath(account)
            guard FileSystem.entry(at: path) != .missing else {
                throw AccountdError(.accountNotFound, "account \(account) does not exist", account: account.rawValue, file: path)
            }
            return Exporter(path: path, account: account, temporaryDirectory: root.temporaryDirectory)
        }
        return try exporter.export(format, to: &sink)
    }
}
