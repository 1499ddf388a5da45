/// A dictionary that keeps at most `capacity` entries, forgetting the oldest first.
///
/// For facts about accounts that only save work when remembered (a file's stamp after its
/// integrity check, what its last inspection found): a daemon that touches 100,000
/// accounts keeps the facts of the latest `capacity` of them, not of all, so its memory
/// does not grow with the fleet. "Oldest" is by when a key was first stored since it was
/// last forgotten; storing a new value under a remembered key keeps its place.
struct BoundedCache<Key: Hashable, Value> {
    let capacity: Int
    private var values: [Key: Value] = [:]
    /// Keys in the order they were stored; `head` is the oldest still to consider. A key
    /// removed by hand stays here until its turn comes and is skipped then.
    private var order: [Key] = []
    private var head = 0

    init(capacity: Int) {
        precondition(capacity > 0, "a cache holds at least one entry")
        self.capacity = capacity
    }

    subscript(key: Key) -> Value? {
        get { values[key] }
        set {
            guard let newValue else {
                values[key] = nil
                return
            }
            if values.updateValue(newValue, forKey: key) == nil {
                order.append(key)
                evict()
            }
        }
    }

    /// How many entries are remembered.
    var count: Int { values.count }

    private mutating func evict() {
        while values.count > capacity, head < order.count {
            values[order[head]] = nil
            head += 1
        }
        // Keys removed by hand leave stale places behind: drop them once they are most of it.
        if head > capacity || order.count - head > 2 * capacity {
            order = order[head...].filter { values[$0] != nil }
            head = 0
        }
    }
}
