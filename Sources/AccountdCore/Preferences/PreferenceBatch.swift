import AccountdProtocol

/// What one group commit does to a preference table: the changes of its writers, in the
/// order they arrived, reduced to each key's last state.
///
/// The net effect is written with two statements, whatever the number of writers: one
/// upsert and one delete, each reading its rows from a JSON array bound as one parameter
/// (`json_each`). A key set twice is written once, with its second value; a key set and
/// then deleted is only deleted. Each writer's answer (for a delete, whether the key
/// existed just before it) is worked out here, in order, against the table's in-memory
/// copy, which the daemon keeps equal to the file: it is the table's only writer.
struct PreferenceBatch {
    private struct Key: Hashable {
        var namespace: String
        var key: String
    }

    /// Each key's value after the batch; nil for a key it deletes.
    private var outcome: [Key: JSONValue?] = [:]
    /// The keys in the order the batch first touched them, so that rows are written in
    /// arrival order.
    private var order: [Key] = []
    /// For each change, in order: for a delete, whether the key existed just before it; true for a set.
    private(set) var answers: [Bool] = []

    /// The net effect of `changes` on a table whose values are `current`.
    init(_ changes: some Sequence<PreferenceDatabase.Change>, current: [String: [String: JSONValue]]) {
        for change in changes {
            switch change {
            case .set(let namespace, let key, let value):
                record(Key(namespace: namespace, key: key), value)
                answers.append(true)
            case .delete(let namespace, let key):
                let target = Key(namespace: namespace, key: key)
                let before = outcome[target] ?? current[namespace]?[key]
                record(target, nil)
                answers.append(before != nil)
            }
        }
    }

    private mutating func record(_ key: Key, _ value: JSONValue?) {
        if outcome.updateValue(value, forKey: key) == nil { order.append(key) }
    }

    /// The SQL that writes the upserts into `table`: `?1` is ``upserts``, `?2` the time.
    ///
    /// A key that exists is updated in place (`ON CONFLICT … DO UPDATE`); `INSERT OR
    /// REPLACE` deleted the row and inserted it again, which made the statement cost half
    /// as much again. The `WHERE true` is SQLite's rule for an upsert fed by a `SELECT`.
    static func upsertSQL(_ table: String) -> String {
        "INSERT INTO \(table)(namespace, key, value, updated_at)"
            + " SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), ?2 FROM json_each(?1) WHERE true"
            + " ON CONFLICT(namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
    }

    /// The SQL that removes the deleted keys from `table`: `?1` is ``deletes``.
    static func deleteSQL(_ table: String) -> String {
        "DELETE FROM \(table) WHERE (namespace, key) IN"
            + " (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1))"
    }

    /// The keys set, as a JSON array of `[namespace, key, value]`, the value as the JSON
    /// text the table keeps; nil when the batch sets none.
    var upserts: String? {
        rows { key, value in
            guard let value else { return nil }
            return [.string(key.namespace), .string(key.key), .string(value.serialized())]
        }
    }

    /// The keys deleted, as a JSON array of `[namespace, key]`; nil when the batch deletes none.
    var deletes: String? {
        rows { key, value in value == nil ? [.string(key.namespace), .string(key.key)] : nil }
    }

    private func rows(_ row: (Key, JSONValue?) -> [JSONValue]?) -> String? {
        let rows = order.compactMap { key in row(key, outcome[key]!) }
        return rows.isEmpty ? nil : JSONValue.array(rows.map(JSONValue.array)).serialized()
    }

    /// Applies the net effect to the in-memory copy `values`, once the batch is committed.
    func apply(to values: inout [String: [String: JSONValue]]) {
        for key in order {
            if let value = outcome[key]! {
                values[key.namespace, default: [:]][key.key] = value
            } else {
                values[key.namespace]?[key.key] = nil
            }
        }
    }
}
