import AccountdProtocol
import Foundation

extension AccountStore {
    /// The exporter of `account`'s file, found under the account's lock.
    ///
    /// The lock is held while the file is found, not while the data streams: the export
    /// reads one consistent transaction (see ``Exporter``), and a slow reader must not hold
    /// up a switch to the account.
    ///
    /// - Parameter hold: the account's hold, taken before (``hold(_:)``); nil to take the lock here.
    /// - Throws: ``AccountdError``: `accountNotFound` or `accountBusy`.
    public func exporter(_ account: AccountName, holding hold: AccountHold? = nil) throws -> Exporter {
        try underLock(account, holding: hold) {
            let path = root.accountPath(account)
            guard FileSystem.entry(at: path) != .missing else {
                throw AccountdError(.accountNotFound, "account \(account) does not exist", account: account.rawValue, file: path)
            }
            return Exporter(path: path, account: account, temporaryDirectory: root.temporaryDirectory, busy: options.lockTimeout)
        }
    }
}
