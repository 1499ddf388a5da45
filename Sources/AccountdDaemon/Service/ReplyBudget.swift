import AccountdProtocol
import Synchronization

/// How many bytes of `Query` replies (without `more`) the daemon holds for clients that have
/// not read them yet: at most ``perUid`` for one caller uid (`limits.replyBytesPerUid`) and
/// ``total`` in all (`limits.replyBytes`).
///
/// A reply is counted from the moment its rows are read (on a pool thread, as they grow) until
/// its last byte is handed to the socket: its rows, its JSON, and its bytes waiting in the
/// channel for a client that does not read. The first ``unbudgetedBytes`` of each reply are
/// not counted, so small replies are never refused. A reply that would go over either bound is
/// refused with `AccountBusy` (``ReplyOverBudget``): its statement is stopped, nothing is kept
/// for it, and the client is told which bound and what to do. Without this, each connection
/// that asks a reply near the 32 MiB value bound and reads nothing would hold its ~45 MB of
/// JSON, and a few hundred of them the host's memory (hostile31 F-mem).
final class ReplyBudget: Sendable {
    /// The bytes of each reply not counted: a reply this small is written as it is.
    static let unbudgetedBytes = 64 * 1024

    /// `limits.replyBytes`.
    let total: Int
    /// `limits.replyBytesPerUid`.
    let perUid: Int

    private let state = Mutex(UidTally())

    init(total: Int, perUid: Int) {
        self.total = max(1, total)
        self.perUid = max(1, perUid)
    }

    /// A new, empty lease for one reply to `uid`.
    func lease(for uid: UInt32, account: AccountName?) -> Lease { Lease(owner: self, uid: uid, account: account) }

    /// The bytes held now for `uid`, and in all.
    func held(by uid: UInt32) -> (uid: Int, all: Int) {
        state.withLock { ($0.held(by: uid), $0.all) }
    }

    /// Counts `bytes` more for `uid`, unless that would pass a bound (or `force`).
    fileprivate func take(_ bytes: Int, uid: UInt32, force: Bool) -> ReplyOverBudget.Bound? {
        switch state.withLock({ $0.add(bytes, uid: uid, perUid: perUid, total: total, force: force) }) {
        case nil: nil
        case .perUid(let held): .perUid(held: held, limit: perUid)
        case .total(let held): .total(held: held, limit: total)
        }
    }

    fileprivate func give(_ bytes: Int, uid: UInt32) {
        guard bytes > 0 else { return }
        state.withLock { $0.remove(bytes, uid: uid) }
    }

    /// The bytes counted for one reply: grown as its rows are read, settled to its JSON's size,
    /// and given back once (``release()``, or when the lease is dropped).
    final class Lease: Sendable {
        private let owner: ReplyBudget
        private let uid: UInt32
        private let account: AccountName?
        /// The bytes counted; -1 once released.
        private let counted = Mutex(0)

        fileprivate init(owner: ReplyBudget, uid: UInt32, account: AccountName?) {
            self.owner = owner
            self.uid = uid
            self.account = account
        }

        /// Makes sure a reply of about `bytes` is counted (beyond ``unbudgetedBytes``); counts
        /// in steps of at least ``unbudgetedBytes`` so the budget's lock is taken rarely.
        ///
        /// - Throws: ``ReplyOverBudget`` when that would pass `limits.replyBytesPerUid` or `limits.replyBytes`.
        func cover(_ bytes: Int) throws(ReplyOverBudget) {
            let needed = bytes - ReplyBudget.unbudgetedBytes
            try counted.withLock { (counted: inout Int) throws(ReplyOverBudget) in
                guard counted >= 0, needed > counted else { return }
                let more = max(needed - counted, ReplyBudget.unbudgetedBytes)
                if let bound = owner.take(more, uid: uid, force: false) {
                    throw ReplyOverBudget(bound: bound, uid: uid, account: account, reply: bytes)
                }
                counted += more
            }
        }

        /// Counts exactly `bytes` (beyond ``unbudgetedBytes``): the reply's JSON is made, and
        /// held whatever the bounds say now (it is at most a few percent more than covered).
        func settle(_ bytes: Int) {
            let needed = max(0, bytes - ReplyBudget.unbudgetedBytes)
            counted.withLock { counted in
                guard counted >= 0, needed != counted else { return }
                if needed > counted {
                    _ = owner.take(needed - counted, uid: uid, force: true)
                } else {
                    owner.give(counted - needed, uid: uid)
                }
                counted = needed
            }
        }

        /// Gives the bytes back (the reply was written, or dropped); later calls do nothing.
        func release() {
            let bytes = counted.withLock { counted in
                defer { counted = -1 }
                return counted
            }
            owner.give(bytes, uid: uid)
        }

        deinit { release() }
    }
}

/// A `Query` reply would pass `limits.replyBytesPerUid` or `limits.replyBytes`: the statement
/// was stopped and nothing is held for it (``ReplyBudget``).
struct ReplyOverBudget: WireError {
    /// Which bound, what was held already, and its setting's value.
    enum Bound: Sendable {
        case perUid(held: Int, limit: Int)
        case total(held: Int, limit: Int)
    }

    let bound: Bound
    let uid: UInt32
    let account: AccountName?
    /// About how many bytes the reply had reached.
    let reply: Int

    var wireName: ErrorName { .accountBusy }
    var wireMessage: String {
        let which =
            switch bound {
            case .perUid(let held, let limit):
                "uid \(uid)'s Query replies that their clients have not read yet hold \(held) bytes, and limits.replyBytesPerUid is \(limit)"
            case .total(let held, let limit):
                "the Query replies that their clients have not read yet hold \(held) bytes in all, and limits.replyBytes is \(limit)"
            }
        let on = account.map { " on account \($0)" } ?? ""
        return
            "the Query\(on) was stopped when its reply reached \(reply) bytes: \(which); nothing was changed. Read the replies already asked for (or close their connections) and retry, ask for fewer rows (maxRows), or stream them with \"more\", which holds one piece at a time"
    }
    var wireFacts: [(String, JSONValue)] {
        let limit =
            switch bound {
            case .perUid(_, let limit), .total(_, let limit): limit
            }
        return (account.map { [("account", JSONValue.string($0.rawValue))] } ?? []) + [("limit", JSONValue(limit))]
    }
}
