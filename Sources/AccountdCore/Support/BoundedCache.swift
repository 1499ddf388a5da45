/// A dictionary that keeps at most `capacity` entries, forgetting the oldest first.
///
/// For facts about accounts that only save work when remembered (a file's stamp after its
/// integrity check, what its last inspection found): a daemon that touches 100,000
/// accounts keeps the facts of the latest `capacity` of them, not of all, so its memory
/// does not grow with the fleet. "Oldest" is by when a key was stored since it was last
/// forgotten; storing a new value under a remembered key keeps its place.
struct BoundedCache<Key: Hashable, Value> {
    let capacity: Int
    /// Each value, with the number of the store that put its key in ``order``.
    private var values: [Key: (value: Value, stored: Int)] = [:]
    /// Keys in the order they were stored, each with its store's number; `head` is the
    /// oldest still to consider. A place whose number is no longer its key's (the key was
    /// forgotten by hand, and maybe stored again since) is stale, and skipped.
    private(set) var order: [(key: Key, stored: Int)] = []
    private var head = 0
    private var stores = 0

    init(capacity: Int) {
        precondition(capacity > 0, "a cache holds at least one entry")
        self.capacity = capacity
    }

    subscript(key: Key) -> Value? {
        get { values[key]?.value }
        set {
            guard let newValue else {
                values[key] = nil
                return
            }
            if let known = values[key] {
                values[key] = (newValue, known.stored)
                return
            }
            stores += 1
            values[key] = (newValue, stores)
            order.append((key, stores))
            evict()
        }
    }

    /// How many entries are remembered.
    var count: Int { values.count }

    private func isCurrent(_ place: (key: Key, stored: Int)) -> Bool {
        values[place.key]?.stored == place.stored
    }

    private mutating func evict() {
        while values.count > capacity, head < order.count {
            let place = order[head]
            if isCurrent(place) { values[place.key] = nil }
            head += 1
        }
        // Stale places pile up when keys are forgotten and stored again: drop them once they
        // outnumber the entries, so the order stays within twice the capacity.
        if order.count - head > 2 * capacity || head > capacity {
            order = order[head...].filter(isCurrent)
            head = 0
        }
    }
}
