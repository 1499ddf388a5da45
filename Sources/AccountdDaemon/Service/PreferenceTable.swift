import AccountdCore
import AccountdProtocol
import Synchronization

/// Where one namespace's values are read and changed: an account's table, the device's,
/// or memory. Reads never wait; a change completes through its callback once it is kept.
protocol PreferenceTable: Sendable {
    /// The value of `key`, or nil.
    func get(_ namespace: String, _ key: String) -> JSONValue?
    /// The keys set in `namespace`, sorted.
    func keys(_ namespace: String) -> [String]
    /// How many keys are set in `namespace`.
    func keyCount(_ namespace: String) -> Int
    /// The UTF-8 bytes of the keys set in `namespace`, together.
    func keyBytes(_ namespace: String) -> Int
    /// Applies `change`; `done` gets whether the key existed before (true for a set), or the failure.
    func apply(_ change: PreferenceDatabase.Change, then done: @escaping PreferenceDatabase.Completion)
}

extension PreferenceDatabase: PreferenceTable {}

/// The `memory` namespaces: values in the daemon's memory only, gone on restart.
final class MemoryPreferences: PreferenceTable {
    private let values = Mutex<[String: [String: JSONValue]]>([:])

    func get(_ namespace: String, _ key: String) -> JSONValue? { values.withLock { $0[namespace]?[key] } }

    func keys(_ namespace: String) -> [String] { values.withLock { $0[namespace].map { Array($0.keys) } ?? [] }.sorted() }

    func keyCount(_ namespace: String) -> Int { values.withLock { $0[namespace]?.count ?? 0 } }

    func keyBytes(_ namespace: String) -> Int { values.withLock { $0[namespace]?.keys.reduce(0) { $0 + $1.utf8.count } ?? 0 } }

    /// Applies `change` at once; returns whether the key existed before.
    func apply(_ change: PreferenceDatabase.Change) -> Bool {
        values.withLock { values in
            switch change {
            case .set(let namespace, let key, let value):
                defer { values[namespace, default: [:]][key] = value }
                return values[namespace]?[key] != nil
            case .delete(let namespace, let key):
                return values[namespace]?.removeValue(forKey: key) != nil
            }
        }
    }

    func apply(_ change: PreferenceDatabase.Change, then done: @escaping PreferenceDatabase.Completion) {
        done(.success(apply(change)))
    }
}
