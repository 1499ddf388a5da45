import AccountdCore
import AccountdProtocol
import Synchronization

/// How many copies `Export {format: "sqlite"}` stages in `data/tmp` at once: at most
/// ``perUid`` for one caller uid (`limits.stagedExportsPerUid`) and ``total`` in all
/// (`limits.stagedExports`). Each copy is the whole account, so without a bound one reader
/// who never reads could fill the data root's disk for everyone.
final class StagedExports: Sendable {
    let perUid: Int
    let total: Int

    private let state = Mutex(UidTally())

    init(perUid: Int, total: Int) {
        self.perUid = max(1, perUid)
        self.total = max(1, total)
    }

    /// A place for one staged copy of `account` for `uid`.
    ///
    /// - Throws: `AccountBusy` when `uid` has ``perUid`` copies staged, or all uids together ``total``.
    func take(for uid: UInt32, account: AccountName) throws -> Slot {
        let refusal: String? =
            switch state.withLock({ $0.add(1, uid: uid, perUid: perUid, total: total) }) {
            case nil: nil
            case .perUid(let mine):
                "uid \(uid) already has \(mine) sqlite exports in progress, each staging a copy of its account (limits.stagedExportsPerUid is \(perUid))"
            case .total(let all):
                "\(all) sqlite exports are in progress, each staging a copy of its account (limits.stagedExports is \(total))"
            }
        if let refusal {
            throw AccountdError(
                .accountBusy,
                "the sqlite export of account \(account) was not started: \(refusal); read those exports to their end (or close them) and retry, or export as jsonl or sql, which stage nothing",
                account: account.rawValue)
        }
        return Slot(owner: self, uid: uid)
    }

    private func give(_ uid: UInt32) {
        state.withLock { $0.remove(1, uid: uid) }
    }

    /// One staged copy's place, given back once by ``release()``.
    final class Slot: Sendable {
        private let owner: StagedExports
        private let uid: UInt32
        private let held = Atomic<Bool>(true)

        fileprivate init(owner: StagedExports, uid: UInt32) {
            self.owner = owner
            self.uid = uid
        }

        /// Gives the place back (the copy is removed); later calls do nothing.
        func release() {
            if held.exchange(false, ordering: .relaxed) { owner.give(uid) }
        }

        deinit { release() }
    }
}
