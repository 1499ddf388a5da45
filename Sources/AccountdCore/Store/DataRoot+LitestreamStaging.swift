import AccountdProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension DataRoot {
    /// Makes a fresh private folder (0700) at the staging name of `account` in `accounts/`
    /// (`.<account>.sqlite.<staging>`, after removing whatever an earlier run left there) for
    /// `litestream restore` to write into, and returns the path of the file it is to write:
    /// ``litestreamOutputPath(_:_:)``.
    ///
    /// `litestream restore -o FILE` writes `FILE.tmp` and then renames it to `FILE`, following
    /// whatever link it finds at `FILE.tmp`. Beside the account files that name would be
    /// predictable and plantable by anyone who may write `accounts/`; inside a folder this
    /// process has just made (`mkdirat` fails on any entry already there, a link included)
    /// and that only its user may enter, no one else can plant anything.
    ///
    /// - Throws: `accountCorrupt` when `accounts/` is a link; `storage` when a leftover cannot
    ///   be removed or the folder cannot be made.
    func makeLitestreamStaging(_ account: AccountName, _ staging: Staging) throws -> String {
        try clearStaging(account, staging)
        let accounts = try folder.makeSubfolder("accounts", account: account)
        let name = stagingName(account, staging)
        guard mkdirat(accounts.descriptor, name, 0o700) == 0 else {
            throw AccountdError.storage("creating the private folder Litestream restores into", path: stagingPath(account, staging), errno: errno)
        }
        return litestreamOutputPath(account, staging)
    }

    /// `accounts/.<account>.sqlite.<staging>/<account>.sqlite`: the file `litestream restore`
    /// writes in the private folder ``makeLitestreamStaging(_:_:)`` makes.
    func litestreamOutputPath(_ account: AccountName, _ staging: Staging) -> String {
        stagingPath(account, staging) + "/" + account.rawValue + ".sqlite"
    }
}
