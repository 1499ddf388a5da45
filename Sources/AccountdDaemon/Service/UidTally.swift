/// Amounts held per caller uid and in all, each against its bound: the one count behind
/// ``ReplyBudget`` (bytes of unread replies) and ``StagedExports`` (staged copies). Not
/// thread-safe by itself: its owner keeps it behind a lock.
struct UidTally {
    /// Which bound an amount would pass, and what was held against it.
    enum Passed: Equatable {
        case perUid(held: Int)
        case total(held: Int)
    }

    private var byUid: [UInt32: Int] = [:]
    private(set) var all = 0

    /// What `uid` holds now.
    func held(by uid: UInt32) -> Int { byUid[uid, default: 0] }

    /// Adds `amount` for `uid`, unless that would pass `perUid` for it or `total` in all
    /// (`force` adds it all the same); returns the bound it would pass, having added nothing.
    mutating func add(_ amount: Int, uid: UInt32, perUid: Int, total: Int, force: Bool = false) -> Passed? {
        let mine = byUid[uid, default: 0]
        if !force {
            if mine + amount > perUid { return .perUid(held: mine) }
            if all + amount > total { return .total(held: all) }
        }
        byUid[uid] = mine + amount
        all += amount
        return nil
    }

    /// Gives back `amount` that `uid` held.
    mutating func remove(_ amount: Int, uid: UInt32) {
        let left = byUid[uid, default: amount] - amount
        byUid[uid] = left > 0 ? left : nil
        all -= amount
    }
}
