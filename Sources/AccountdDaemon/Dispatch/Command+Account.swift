import AccountdProtocol

extension Command {
    /// The account this command acts on, when it names one (or admission named the caller's
    /// active account for it): what the log line of its failure names as `account=`, whatever
    /// the error.
    var account: AccountName? {
        switch self {
        case .status(let account), .keys(_, let account), .query(let account, _, _, _), .execute(let account, _, _): account
        case .switchAccount(let account, _), .export(let account, _), .verify(let account), .plan(let account),
            .snapshots(let account), .restore(let account, _, _, _), .snapshot(let account, _), .remove(let account, _, _),
            .pull(let account, _, _), .importAccount(let account, _, _, _):
            account
        case .get(let key), .set(let key, _), .delete(let key): key.account
        case .info, .ping, .list, .migrate, .watch, .metrics, .replication: nil
        }
    }
}
