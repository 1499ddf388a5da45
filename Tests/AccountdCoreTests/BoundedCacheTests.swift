import Testing

@testable import AccountdCore

/// The bound on the store's per-account facts: the oldest entries go first, a removed key
/// leaves no ghost, and a long run of new keys keeps the count (and the key order) bounded.
@Suite struct BoundedCacheTests {
    @Test func theOldestGoFirstAndReplacingKeepsThePlace() {
        var cache = BoundedCache<String, Int>(capacity: 3)
        cache["a"] = 1
        cache["b"] = 2
        cache["c"] = 3
        cache["a"] = 10  // a new value, same place
        cache["d"] = 4  // over the capacity: the oldest, a, goes
        #expect(cache["a"] == nil && cache["b"] == 2 && cache["c"] == 3 && cache["d"] == 4 && cache.count == 3)
        cache["c"] = nil
        cache["e"] = 5
        cache["f"] = 6  // b goes; c was already forgotten by hand
        #expect(cache["b"] == nil && cache["c"] == nil && cache["d"] == 4 && cache["e"] == 5 && cache["f"] == 6)
    }

    @Test func keysForgottenAndStoredAgainLeaveTheOrderBounded() {
        // What a switch back and forth does: forget an account's facts, then store them again.
        var cache = BoundedCache<String, Int>(capacity: 4)
        for round in 0..<10_000 {
            let key = round % 2 == 0 ? "alice" : "bob"
            cache[key] = nil
            cache[key] = round
        }
        #expect(cache.count == 2 && cache["alice"] == 9_998 && cache["bob"] == 9_999)
        #expect(cache.order.count <= 2 * 4 + 1, "the order holds \(cache.order.count) places for 2 keys")
        // A key stored again is younger than those stored since its first store.
        cache["carol"] = 1
        cache["dave"] = 2
        cache["alice"] = nil
        cache["alice"] = 3
        cache["erin"] = 4  // five keys: the oldest, bob, goes; alice was stored again after carol and dave
        #expect(cache["bob"] == nil && cache["alice"] == 3 && cache["carol"] == 1 && cache.count == 4)
    }

    @Test func aFleetOfKeysStaysWithinTheCapacity() {
        var cache = BoundedCache<Int, Int>(capacity: 64)
        for key in 0..<100_000 {
            cache[key] = key
            if key % 7 == 0 { cache[key - 3] = nil }
        }
        #expect(cache.count <= 64)
        #expect(cache[99_999] == 99_999 && cache[0] == nil)
    }
}
