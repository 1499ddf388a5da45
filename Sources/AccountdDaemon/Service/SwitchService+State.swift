import AccountdCore
import AccountdProtocol
import Synchronization

/// What ``SwitchService`` keeps and reports: its mutable state behind one lock, and the values
/// a switch and its commit pass around.
extension SwitchService {
    /// The mutable state.
    struct State: Sendable {
        /// Each uid's active account, as `state.json` has them.
        var active: [UInt32: AccountName] = [:]
        /// The version of each account that is active for some uid, as its file has it.
        var versions: [AccountName: Int] = [:]
        /// The uid whose switch committed last: systemd's status line and the metrics
        /// describe its active account (see ``described``).
        var lastUID: UInt32?
        /// Accounts being removed: none of them may become active meanwhile.
        var removing: Set<AccountName> = []
        /// Per uid: why its active account could not be brought to the bundle, until an open
        /// of it succeeds or another account becomes its active one; with no active account,
        /// why its saved one could not be opened at start-up (`Status` then says `idle`,
        /// with the reason).
        var failures: [UInt32: Failure] = [:]
        /// At start-up, per uid, while its saved active account is not open yet.
        var opening: [UInt32: Opening] = [:]
        /// How many uids' first start-up attempt has not ended yet.
        var unsettled = 0
        /// Per uid: who made its active account active, as the kernel reported that peer
        /// (its groups, its user name), or for one made active before this start, the first
        /// call of that uid that could read it; so that a reload, or a call from another
        /// process of the uid, can tell whether it may still read it
        /// (``SwitchService/dropUnreadable(under:)``, ``SwitchService/active(for:under:)``).
        var switchers: [UInt32: PeerCredentials] = [:]
        /// Active accounts a `Query` or `Execute` migrated (``SwitchService/migrateOne(_:create:)``)
        /// since they were last opened by a switch: the version each came from, so that the
        /// reopen that follows (a reload's) reports `migrated`, not `opened`; and the version it
        /// went to (a reopen at another version did not find that migration's result).
        var migratedInUse: [AccountName: (from: Int, to: Int)] = [:]

        /// The uids whose active account is `account`.
        func uids(of account: AccountName) -> [UInt32] {
            active.compactMap { $0.value == account ? $0.key : nil }
        }
    }

    /// A failed attempt to bring an account to the bundle, as `Status` reports it.
    struct Failure: Sendable {
        var account: AccountName
        var message: String
        /// The file is newer than the bundle and not readable by it.
        var tooNew: Bool
    }

    /// The saved active account, while start-up has not opened it yet.
    struct Opening: Sendable {
        var account: AccountName
        /// Why the last attempt did not open it; nil during the first.
        var problem: String?
    }

    /// Which account a switch's commit may make active.
    enum Commit: Sendable {
        /// A `Switch` by `uid`: the account becomes its active one; with `save`,
        /// `state.json` names it.
        case select(save: Bool, uid: UInt32)
        /// Opening an active account again (a reload, a restore, a reload during a switch):
        /// it is kept active for the uids whose active account it still is, so a switch to
        /// another account made meanwhile stands.
        case refresh
        /// `uid`'s saved account at start-up: made active only while it has none.
        case startup(uid: UInt32)
    }

    /// What a completed switch did.
    struct Switched: Sendable {
        var outcome: OpenOutcome
        var previous: AccountName?
        /// False when the commit's condition (``Commit``) no longer held: the account was
        /// opened but did not become, or stay, an active one.
        var committed: Bool = true
    }
}
